"""A drill-down row's Explain, in Chromium: the tenant's explain box, filled with the request
and answered.

A real Daphne and real websocket frontends (tests/e2e/conftest.py). The
request's rule reads its query and its time range, so an answer that
matches it shows the query and the times both came across.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from loadgen.daphne_process import DaphneProcess
from tests.e2e.conftest import Traffic, browser_tab, put_tenant
from tests.e2e.drill_pages import open_drill

RLO = "\u202e"
# A bidi control hidden in a label value: the row shows it marked, the box holds it as sent.
QUERY = f'sum(rate(needle_total{{job="{RLO}gnp.exe"}}[5m]))'
SHOWN = 'sum(rate(needle_total{job="⟨U+202E⟩gnp.exe"}[5m]))'
# Priority 7 for a needle reading no data older than 15 minutes: traffic.enqueue's
# requests read the last 10. At the box's default Start (1h ago) it would not match.
EXPLAINED = {
    "query_priority": {
        "enabled": True,
        "default_priority": 0,
        "priorities": [
            {
                "priority": 7,
                "query_attributes": [{"regex": "needle", "time_window": {"start": "15m"}}],
            }
        ],
    }
}
VIEWER = ("vera", "pw-vera-e2e-123")


@pytest.fixture(scope="module", autouse=True)
def _explained_queued(server: DaphneProcess, traffic: Traffic) -> None:
    """The tenant `explained`, configured, with one request queued; `loose`, without a block."""
    put_tenant(server, "explained", EXPLAINED)
    traffic.enqueue("explained", QUERY, headers={"X-Loki-Actor-Path": "team|joe"})
    traffic.enqueue("loose", "up")
    server.create_user(*VIEWER)


@pytest.fixture
def viewer_page(browser: Browser, server: DaphneProcess) -> Iterator[Page]:
    with browser_tab(browser, server) as tab:
        tab.goto("/login/")
        tab.get_by_label("User name").fill(VIEWER[0])
        tab.get_by_label("Password").fill(VIEWER[1])
        tab.get_by_role("button", name="Log in").click()
        expect(tab).not_to_have_url(re.compile(r"/login/"))
        yield tab


def explain_button(page: Page) -> object:
    row = page.locator("#drill-rows > li").first
    expect(row.locator(".q")).to_have_text(SHOWN)
    return row.get_by_role("button", name=re.compile(r"^Explain .+ in its tenant's rules$"))


def expect_explained(page: Page) -> None:
    """On explained's editor page, its explain box filled with the request and answered."""
    expect(page).to_have_url(re.compile(r"/tenants/explained/#explain\?"))
    expect(page.locator("#explain_query")).to_have_value(QUERY)
    expect(page.locator("#explain_api_type")).to_have_value("query_range")
    # Its times as durations before it was queued: start 600 s, end now, step 30 s.
    expect(page.locator("#explain_start")).to_have_value(re.compile(r"^10m(\d+ms)?$"))
    expect(page.locator("#explain_end")).to_have_value(re.compile(r"^(0s|\d+ms)$"))
    expect(page.locator("#explain_step")).to_have_value("30s")
    expect(page.locator("#explain_actor_path")).to_have_value("team|joe")
    # Not the box's defaults where the request has nothing to say.
    expect(page.locator("#explain_user_agent")).to_have_value("")
    expect(page.locator("#explain-from")).to_contain_text("Filled in from request ")
    expect(page.locator("#explain-priority")).to_have_text("7")
    expect(page.locator("#explain-source")).to_have_text("rule 1, attribute 1")
    expect(page.locator("#explain-actor")).to_contain_text("team|joe")
    expect(page.locator("#explain")).to_be_in_viewport()


def test_a_queued_request_s_explain_lands_on_its_tenant_s_explain_box_filled_and_answered(
    page: Page,
) -> None:
    open_drill(page, "explained")
    explain = explain_button(page)
    # From the keyboard: a button of its own, named for its request.
    explain.focus()
    page.keyboard.press("Enter")
    expect_explained(page)
    # Nothing typed: leaving asks nothing.
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/$"))


def test_a_viewer_may_explain_a_request_too(viewer_page: Page) -> None:
    open_drill(viewer_page, "explained")
    row = viewer_page.locator("#drill-rows > li").first
    expect(row.get_by_role("button", name="Cancel…")).to_have_count(0)
    explain_button(viewer_page).click()
    expect_explained(viewer_page)
    expect(viewer_page.get_by_text("read-only: editing needs the editor role")).to_be_visible()


def test_a_tenant_without_a_block_is_said_so_instead_of_a_missing_page(page: Page) -> None:
    open_drill(page, "loose")
    row = page.locator("#drill-rows > li").first
    row.get_by_role("button", name=re.compile("^Explain ")).click()
    expect(page.locator("#drill-message")).to_have_text(
        "loose has no block of its own: its requests run under the default limits (Settings),"
        " with no rules to explain."
    )
    expect(page).to_have_url(re.compile(r"/$"))


def test_times_go_to_the_box_as_durations_and_a_request_it_cannot_take_is_refused(
    page: Page,
) -> None:
    page.goto("/")
    said = page.evaluate(
        """async () => {
          const m = await import('/static/dashboard/drill_explain.js');
          const row = { id: "r1", query: "up", api_type: "query_range", start: 1000, end: 1600,
                        step: 0.5, actor: "", query_truncated: false };
          return [
            [0, 0.0004, 0.5, 600, 90061.5].map(m.durationText),
            m.explainFragment(row, 1600),
            m.explainFragment({ ...row, end: 1601 }, 1600),
            m.explainFragment({ ...row, query_truncated: true }, 1600),
          ];
        }"""
    )
    assert said == [
        ["0s", "0s", "500ms", "10m", "1d1h1m1s500ms"],
        {"fragment": "#explain?from=r1&query=up&api_type=query_range&start=10m&end=0s&step=500ms"},
        {"problem": "r1's end is after it was queued: the explain box takes times before then."},
        {
            "problem": "r1's query is longer than the queue listing shows:"
            " explained, only its start would be judged."
        },
    ]
