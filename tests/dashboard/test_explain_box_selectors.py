"""The explain box's match[] selectors, one a line: judged each on its own, as the gRPC door does.

The door's answer is had from its own `Admission`, on the forwarded HTTP
request a Cortex frontend would send; the box's through the editor's
explain view (`POST /tenants/<id>/explain/`), as a browser posts it.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from api.store import services
from api.wire.grpc.admission import Admission
from api.wire.grpc.clients import get_request
from dashboard.explain_box import EXPLAIN_DEFAULTS, EXPLAIN_FIELDS, run_explain, selector_lines
from scheduler_core.model import QueueConfig, TenantLimits
from scheduler_core.pb import schedulerpb_pb2 as pb
from scheduler_core.validation import tenant_limits_from_dict

pytestmark = pytest.mark.django_db

# Anchored: it matches the selector `up` on its own, never the joined "down,up".
ANCHORED: dict[str, Any] = {
    "query_priority": {
        "enabled": True,
        "default_priority": 0,
        "priorities": [{"priority": 7, "query_attributes": [{"regex": "^up$"}]}],
    }
}


class _Host:
    config = QueueConfig()

    def tenant_limits(self, tenant_id: str) -> TenantLimits:
        return tenant_limits_from_dict(ANCHORED)


def _door_priority(selectors: list[str]) -> int:
    msg = pb.FrontendToScheduler(
        type=pb.ENQUEUE,
        queryID=1,
        userID="team",
        httpRequest=get_request("/api/v1/series", [("match[]", s) for s in selectors]),
    )
    return Admission(_Host()).build(msg, "fe:1").priority


def _inputs(**typed: str) -> dict[str, str]:
    return {
        **{k: EXPLAIN_DEFAULTS.get(k, "") for k in EXPLAIN_FIELDS},
        "api_type": "series",
        **typed,
    }


def test_a_browser_s_crlf_lines_are_the_selectors_and_empty_lines_are_none() -> None:
    assert selector_lines('down\r\n\r\nfoo{a="1,2"}\r\n') == ["down", 'foo{a="1,2"}']
    assert selector_lines("up\nx") == ["up", "x"]
    assert selector_lines("") == []


def test_selectors_a_line_are_judged_each_on_its_own_as_the_door_judges_them() -> None:
    found = run_explain("team", ANCHORED, _inputs(matchers="down\r\nup\r\n"))
    assert (
        (found["priority"], found["source"])
        == (7, "rule")
        == (_door_priority(["down", "up"]), "rule")
    )
    assert "match[] selector 2 of 2" in found["rules"][0]["reasons"][0].message


def test_without_selectors_the_query_is_the_one_selector_and_gets_another_answer() -> None:
    # The websocket door's reading of its one `query` text.
    assert run_explain("team", ANCHORED, _inputs(query="down,up"))["priority"] == 0


def test_the_query_may_be_left_empty_or_repeat_the_join_the_queue_lists() -> None:
    for query in ("", "  ", "down,up"):
        found = run_explain("team", ANCHORED, _inputs(query=query, matchers="down\nup"))
        assert found["priority"] == 7, query


@pytest.mark.parametrize(
    ("typed", "problem"),
    [
        (
            {"query": "down", "matchers": "down\nup"},
            "Query: with match[] selectors, leave it empty or give their ',' join.",
        ),
        (
            {"api_type": "query_range", "query": "up", "matchers": "up"},
            "match[] selectors: a query_range call has none; empty that box.",
        ),
        ({"api_type": "query", "query": " "}, "Type a query to explain."),
    ],
)
def test_boxes_that_cannot_be_read_together_are_refused_naming_the_box(
    typed: dict[str, str], problem: str
) -> None:
    assert run_explain("team", ANCHORED, _inputs(**typed)) == {"problem": problem}


def test_a_metadata_call_without_selectors_is_explained_as_one() -> None:
    found = run_explain("team", ANCHORED, _inputs(api_type="labels"))
    assert found["priority"] == 0 == _door_priority([])
    assert "the request has no match[] selectors" in found["rules"][0]["reasons"][0].message


def test_the_editor_s_explain_view_reads_the_selectors_box_and_shows_it_again(
    editor_client: Client,
) -> None:
    services.tenant_put(
        tenant_id="team", config=ANCHORED, expected_version=None, author=None, source="cli"
    )
    data = {
        "action": "explain",
        "query_priority.enabled": "on",
        "query_priority.default_priority": "0",
        "query_priority.priorities[0].priority": "7",
        "query_priority.priorities[0].query_attributes[0].regex": "^up$",
        "explain_api_type": "series",
        "explain_start": "10m",
        "explain_end": "0s",
        "explain_matchers": "down\r\nup",
    }
    html = editor_client.post("/tenants/team/explain/", data).content.decode()
    assert '<dd id="explain-priority" class="big">7</dd>' in html
    # The full page (no script) keeps the box as it was posted.
    page = editor_client.post("/tenants/team/", data).content.decode()
    assert 'id="explain_matchers"' in page and "down\r\nup</textarea>" in page
