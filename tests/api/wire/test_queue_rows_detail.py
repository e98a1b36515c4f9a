"""One request's detail row: the headers its rules read and its `match[]` selectors apart.

Requests are admitted as the doors admit them: the gRPC door's `Admission`
from a forwarded HTTP request (GET and form POST), and websocket-shaped
requests carrying the headers a websocket enqueue sends. The queue runs on
a fake clock.
"""

from __future__ import annotations

from typing import Any

import pytest

from api.wire.grpc.admission import Admission
from api.wire.grpc.clients import get_request, post_request
from api.wire.queue_requests import cancel_one, find_row, list_page
from api.wire.queue_rows import RequestFilter
from scheduler_core.model import QueueConfig, Request, TenantLimits
from scheduler_core.pb import schedulerpb_pb2 as pb
from scheduler_core.runtime import SchedulerRuntime
from tests.fakes import FakeClock

NOW = 1_700_000_040.0
# The second holds a ",": the door's `query` ("up,foo{...}") cannot be split back.
SELECTORS = ["up", 'foo{a="1,2"}', 'bar{job="x"}']


class _Host:
    config = QueueConfig()

    def tenant_limits(self, tenant_id: str) -> TenantLimits:
        return TenantLimits()


class _WebsocketHandle:
    transport = "websocket"

    def __init__(self) -> None:
        self.consumer = type("Consumer", (), {"scope": {"client": ("10.0.0.7", 5123)}})()
        self.client_id = "c-1"


def _grpc(query_id: int, path: str, params: list[tuple[str, str]], **kw: Any) -> Request:
    build = kw.pop("build", get_request)
    msg = pb.FrontendToScheduler(
        type=pb.ENQUEUE,
        queryID=query_id,
        userID="team",
        httpRequest=build(path, params, kw.pop("headers", {})),
    )
    return Admission(_Host(), wall_clock=lambda: NOW).build(msg, "fe:1")


def _series(query_id: int = 1, **kw: Any) -> Request:
    params = [("start", str(NOW - 600)), ("end", str(NOW))]
    return _grpc(query_id, "/api/v1/series", params + [("match[]", s) for s in SELECTORS], **kw)


@pytest.fixture
def runtime() -> SchedulerRuntime:
    return SchedulerRuntime(clock=FakeClock(NOW))


def _detail(runtime: SchedulerRuntime, request: Request, **kw: Any) -> dict[str, Any]:
    runtime.enqueue(request)
    row = find_row(runtime, request.id, replica="r1", names={}, **kw)
    assert row is not None
    return row


def test_a_grpc_metadata_call_s_detail_lists_its_selectors_apart_as_the_door_judged_them(
    runtime: SchedulerRuntime,
) -> None:
    row = _detail(runtime, _series())
    assert row["query"] == ",".join(SELECTORS)
    assert row["matchers"] == SELECTORS


def test_selectors_sent_in_a_form_body_are_listed_too(runtime: SchedulerRuntime) -> None:
    row = _detail(runtime, _series(build=post_request))
    assert row["matchers"] == SELECTORS


def test_a_call_without_selectors_lists_none_and_an_expression_call_has_no_list(
    runtime: SchedulerRuntime,
) -> None:
    labels = _detail(runtime, _grpc(1, "/api/v1/labels", [("start", "1"), ("end", "2")]))
    assert labels["matchers"] == []
    ranged = _grpc(2, "/api/v1/query_range", [("query", "up"), ("step", "15")])
    assert _detail(runtime, ranged)["matchers"] is None


def test_a_query_cut_at_the_row_s_limit_keeps_the_selectors_it_holds_whole(
    runtime: SchedulerRuntime,
) -> None:
    # "up,foo{a=\"1,2\"}" is 15 characters: a cut at 15 holds two whole, at 14 one.
    runtime.enqueue(_series())
    rid = "grpc:fe:1:1"
    for limit, whole in [(15, SELECTORS[:2]), (14, SELECTORS[:1]), (1, [])]:
        row = find_row(runtime, rid, replica="r1", names={}, query_limit=limit)
        assert row is not None and row["query_truncated"]
        assert row["matchers"] == whole


def test_only_the_three_headers_rules_read_are_listed_under_their_names(
    runtime: SchedulerRuntime,
) -> None:
    sent = {
        "user-agent": "Grafana/11",
        "X-DASHBOARD-UID": "ops",
        "X-Panel-Id": "4",
        "Authorization": "Bearer secret",
        "Cookie": "session=secret",
    }
    row = _detail(runtime, _series(headers=sent))
    assert row["headers"] == {
        "User-Agent": "Grafana/11",
        "X-Dashboard-Uid": "ops",
        "X-Panel-Id": "4",
    }
    assert "secret" not in repr(row)


def test_a_websocket_request_lists_its_headers_as_classification_read_them_and_no_selectors(
    runtime: SchedulerRuntime,
) -> None:
    # A websocket enqueue's headers are the client's object: any spelling,
    # any other header beside them; the first spelling sent wins, as it did
    # for the rules. Its one query text was judged as one selector.
    request = Request(
        id="ws:1:1",
        tenant_id="team",
        query="up,down",
        api_type="series",
        headers={"x-dashboard-uid": "ops", "X-Dashboard-Uid": "other", "X-Api-Key": "secret"},
        payload=_WebsocketHandle(),
    )
    row = _detail(runtime, request)
    assert row["headers"] == {"X-Dashboard-Uid": "ops"}
    assert row["matchers"] is None and row["frontend"]["transport"] == "websocket"
    assert "secret" not in repr(row)


async def test_listing_rows_stay_as_they_were_and_a_cancel_answers_the_detail(
    runtime: SchedulerRuntime,
) -> None:
    runtime.enqueue(_series(headers={"X-Panel-Id": "4"}))
    page = await list_page(runtime, RequestFilter(), cursor=None, limit=10, replica="r1", names={})
    assert "headers" not in page.rows[0] and "matchers" not in page.rows[0]
    cancelled = cancel_one(runtime, "grpc:fe:1:1", "gone", replica="r1", names={})
    assert cancelled is not None
    assert cancelled["headers"] == {"X-Panel-Id": "4"} and cancelled["matchers"] == SELECTORS
