"""A queued request's Explain, in Chromium: its headers and a metadata call's match[] selectors
go across.

A real Daphne serving gRPC too, a Cortex-style gRPC frontend and a
websocket frontend (tests/e2e/conftest.py). The tenant's first rule wants
the selector `up` on its own (an anchored regex: the door's joined
"down,up" never matches it) from Grafana's User-Agent; its second the
X-Dashboard-Uid `ops`, which Cortex reads for query and query_range calls
only. So the box answers as the queue did only when the selectors, apart,
and the headers came across.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import Locator, Page, expect

from api.wire.grpc.clients import CortexFrontend, get_request
from loadgen.daphne_process import DaphneProcess, user_code
from scheduler_core.pb import schedulerpb_pb2 as pb
from tests.e2e.conftest import EDITOR, Traffic, module_server, put_tenant
from tests.e2e.drill_pages import open_drill

RULES = {
    "query_priority": {
        "enabled": True,
        "default_priority": 0,
        "priorities": [
            {
                "priority": 7,
                "query_attributes": [{"regex": "^up$", "user_agent_regex": "^Grafana/"}],
            },
            {"priority": 5, "query_attributes": [{"dashboard_uid": "ops"}]},
        ],
    }
}
RANGED = "sum(rate(errors_total[5m]))"
HEADERS = {"User-Agent": "Grafana/11.1", "X-Dashboard-Uid": "ops", "X-Panel-Id": "4"}


@pytest.fixture(scope="module")
def server() -> Iterator[DaphneProcess]:
    """This module's server serves gRPC too (the shared one does not)."""
    yield from module_server(grpc=True, code=user_code(*EDITOR, group="editor"))


@pytest.fixture(scope="module", autouse=True)
def _metadata_calls_queued(server: DaphneProcess, traffic: Traffic) -> Iterator[None]:
    """meta's series call and a range query from the gRPC frontend (kept open: closed, it would
    cancel them), and the series call's selectors joined in one websocket enqueue's query."""
    put_tenant(server, "meta", RULES)

    async def grpc_enqueue() -> CortexFrontend:
        fe = await CortexFrontend(f"127.0.0.1:{server.grpc_port}").start()
        loop = await fe.open_loop()
        now = time.time()
        params = [("match[]", "down"), ("match[]", "up"), ("start", str(now - 600))]
        request = get_request("/prometheus/api/v1/series", [*params, ("end", str(now))], HEADERS)
        assert await loop.enqueue(1, "meta", request) == pb.OK
        params = [("query", RANGED), ("start", str(now - 600)), ("end", str(now)), ("step", "30")]
        request = get_request("/prometheus/api/v1/query_range", params, HEADERS)
        assert await loop.enqueue(2, "meta", request) == pb.OK
        return fe

    frontend = traffic.run(grpc_enqueue())
    traffic.enqueue(
        "meta", "down,up", api_type="series", step=None, headers={"user-agent": "Grafana/11.1"}
    )
    yield
    traffic.run(frontend.close())


def explain(page: Page, frontend: str, query: str) -> None:
    """The Explain of meta's row of `query` sent by `frontend` ("gRPC" or "websocket"), pressed."""
    rows = page.locator("#drill-rows > li").filter(has_text=frontend)
    row: Locator = rows.filter(has=page.locator(".q", has_text=query))
    expect(row).to_have_count(1)
    row.get_by_role("button", name=re.compile(r"^Explain .+ in its tenant's rules$")).click()
    expect(page).to_have_url(re.compile(r"/tenants/meta/#explain\?"))


def test_a_grpc_metadata_call_s_explain_lands_with_its_selectors_and_headers_and_its_rule(
    page: Page,
) -> None:
    open_drill(page, "meta")
    explain(page, "gRPC", "down,up")
    expect(page.locator("#explain_api_type")).to_have_value("series")
    expect(page.locator("#explain_matchers")).to_have_value("down\nup")
    expect(page.locator("#explain_query")).to_have_value("down,up")
    expect(page.locator("#explain_user_agent")).to_have_value("Grafana/11.1")
    expect(page.locator("#explain_dashboard_uid")).to_have_value("ops")
    expect(page.locator("#explain_panel_id")).to_have_value("4")
    expect(page.locator("#explain-from")).to_contain_text("the three rules read")
    expect(page.locator("#explain-from")).not_to_contain_text("not kept apart")
    # Priority 7 as the door gave it: `up` on its own, from Grafana.
    expect(page.locator("#explain-priority")).to_have_text("7")
    expect(page.locator("#explain-source")).to_have_text("rule 1, attribute 1")
    expect(page.locator("#explain-output .why").first).to_contain_text(
        "found in match[] selector 2 of 2"
    )
    # The User-Agent filled in decided it too: without it no rule matches.
    page.locator("#explain_user_agent").fill("")
    page.get_by_role("button", name="Explain", exact=True).click()
    expect(page.locator("#explain-priority")).to_have_text("0")
    expect(page.locator("#explain-output")).to_contain_text(
        "no field that is set applies to series requests"
    )


def test_a_range_query_s_explain_lands_with_its_dashboard_and_the_dashboard_rule_decides(
    page: Page,
) -> None:
    open_drill(page, "meta")
    explain(page, "gRPC", RANGED)
    expect(page.locator("#explain_query")).to_have_value(RANGED)
    expect(page.locator("#explain_matchers")).to_have_value("")
    expect(page.locator("#explain_dashboard_uid")).to_have_value("ops")
    expect(page.locator("#explain_panel_id")).to_have_value("4")
    expect(page.locator("#explain-priority")).to_have_text("5")
    expect(page.locator("#explain-source")).to_have_text("rule 2, attribute 1")
    # The dashboard filled in decided it: without it the rule no longer matches.
    page.locator("#explain_dashboard_uid").fill("")
    page.get_by_role("button", name="Explain", exact=True).click()
    expect(page.locator("#explain-priority")).to_have_text("0")


def test_a_websocket_metadata_call_s_one_query_text_is_said_to_be_one_selector(
    page: Page,
) -> None:
    open_drill(page, "meta")
    explain(page, "websocket", "down,up")
    expect(page.locator("#explain_query")).to_have_value("down,up")
    expect(page.locator("#explain_matchers")).to_have_value("")
    expect(page.locator("#explain_user_agent")).to_have_value("Grafana/11.1")
    expect(page.locator("#explain-from")).to_contain_text(
        "Its match[] selectors were not kept apart (a websocket enqueue carries one query text):"
        " the scheduler judged that text as one selector, and so does this box."
    )
    # As the queue judged it: "down,up" is no `up` on its own, Grafana or not.
    expect(page.locator("#explain-priority")).to_have_text("0")
    expect(page.locator("#explain-source")).to_have_text("default priority (no rule matched)")


def test_a_selector_holding_a_line_break_is_refused_in_the_panel(page: Page) -> None:
    page.goto("/")
    said = page.evaluate(
        """async () => {
          const m = await import('/static/dashboard/drill_explain.js');
          const detail = { id: "r1", query: "a,\\nb", api_type: "series", start: null,
                           end: null, step: null, actor: "", query_truncated: false,
                           headers: {}, matchers: ["a", "", "`\\nb`"] };
          return [
            m.explainFragment(detail, 1600),
            m.explainFragment({ ...detail, matchers: ["a", "", "b"] }, 1600),
          ];
        }"""
    )
    assert said == [
        {
            "problem": "r1's match[] selector 3 holds a line break: the explain box takes one"
            " selector a line (POST /api/v1/explain/ takes them as a list)."
        },
        {"fragment": "#explain?from=r1&query=a%2Cb&api_type=series&matchers=a%0Ab"},
    ]
