"""`queue/requests/`, its detail and cancel, and `queue/cancel/`, on an in-process runtime.

The runtime here runs on a fake clock with no loop of its own: the views
reach it through `async_to_sync` exactly as under Daphne. Requests carry a
websocket-shaped reply handle that records the failure its frontend would
be sent. The real-Daphne, real-frontend version is
tests/service/test_queue_requests_service.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from api.store.models import OperatorCancel
from api.wire import runtime_host
from api.wire.observers import FanOutObserver
from scheduler_core.model import PriorityDef, QueryAttribute, QueryPriority, Request, TenantLimits
from scheduler_core.runtime import SchedulerRuntime
from tests.fakes import BareHost, FakeClock


class Consumer:
    def __init__(self) -> None:
        self.scope = {"client": ("10.0.0.7", 5123)}
        self.token = type("Token", (), {"name": "grafana"})()


class Handle:
    """Shaped like the websocket reply handle; keeps what its frontend was told."""

    transport = "websocket"

    def __init__(self, client_id: str) -> None:
        self.consumer = Consumer()
        self.client_id = client_id
        self.failures: list[str] = []

    def on_failed(self, request: Request, reason: str) -> None:
        self.failures.append(reason)


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> SchedulerRuntime:
    clock = FakeClock(1000.0)
    rt = SchedulerRuntime(clock=clock, observer=FanOutObserver())
    rules = QueryPriority(
        enabled=True, priorities=[PriorityDef(3, 0, [QueryAttribute(regex="slow")])]
    )
    rt.set_tenant_limits("acme", TenantLimits(query_priority=rules))
    for i, (tenant, component, query) in enumerate(
        [
            ("acme", "ingester", "sum(rate(up[5m]))"),
            ("acme", "ingester", "slow_query{job='x'}\nby (le)"),
            ("acme", "store-gateway", "count(up)"),
            ("beta", "ingester", "rate(http_requests_total[1m])"),
            ("acme", "ingester", "max(up)"),
        ]
    ):
        clock.now = 1000.0 + i
        slow = "slow" in query
        rt.enqueue(
            Request(
                id=f"ws:c1:{i}",
                tenant_id=tenant,
                component=component,
                priority=3 if slow else 0,
                query=query,
                start=500.0,
                end=900.0,
                step=15.0,
                payload=Handle(f"client-{i}"),
                priority_rule=(0, 0) if slow else None,
                priority_source="rule" if slow else "default",
            )
        )
    clock.now = 1010.0
    host = BareHost(rt)
    monkeypatch.setattr(runtime_host, "started", lambda: True)
    monkeypatch.setattr(runtime_host, "get_host", lambda: host)
    return rt


def ids(body: dict[str, Any]) -> list[str]:
    return [row["id"] for row in body["results"]]


def test_a_tenant_s_requests_come_in_dequeue_order_with_every_field(viewer_api, runtime):
    body = viewer_api.get("/api/v1/queue/requests/", {"tenant": "acme"}).json()
    # Highest priority first in its leaf; the tenant's two leaves by round-robin.
    assert ids(body) == ["ws:c1:1", "ws:c1:2", "ws:c1:0", "ws:c1:4"]
    assert body["total"] == 4 and body["next"] is None and body["running"] is True
    first = body["results"][0]
    assert first == {
        "id": "ws:c1:1",
        "client_id": "client-1",
        "tenant": "acme",
        "component": "ingester",
        "priority": 3,
        "rule": {"priority_index": 0, "attribute_index": 0},
        "source": "rule",
        "query": "slow_query{job='x'}\nby (le)",
        "query_truncated": False,
        "api_type": "query",
        "start": 500.0,
        "end": 900.0,
        "step": 15.0,
        "state": "queued",
        "wait_seconds": 9.0,
        "attempts": 0,
        "querier": None,
        "worker": None,
        "running_seconds": None,
        "frontend": {"transport": "websocket", "address": "10.0.0.7:5123", "name": "grafana"},
        "replica": first["replica"],
        "actor": "",
    }
    assert body["results"][2]["rule"] is None and body["results"][2]["source"] == "default"


def test_a_tenant_s_listing_says_which_queriers_may_serve_it(viewer_api, runtime):
    for querier in ("q-a", "q-b", "q-c"):
        runtime.queue.connect_querier(querier)
    rules = QueryPriority(
        enabled=True,
        priorities=[PriorityDef(3, 1, [QueryAttribute(regex="slow")])],
    )
    runtime.set_tenant_limits("acme", TenantLimits(max_queriers=2, query_priority=rules))
    body = viewer_api.get("/api/v1/queue/requests/", {"tenant": "acme"}).json()
    shard = body["serving"]["shard"]
    assert len(shard) == 2 and set(shard) < {"q-a", "q-b", "q-c"}
    assert body["serving"]["queriers"] == 3
    assert body["serving"]["reserved"] == [[3, [shard[0]]]]  # the shard's first, sorted
    assert body["serving"]["reserved_workers"] == {"idle": 1, "connected": 1}
    # Beta is not sharded and reserves nothing; a listing of no tenant says nothing.
    beta = viewer_api.get("/api/v1/queue/requests/", {"tenant": "beta"}).json()
    assert beta["serving"] == {"shard": None, "queriers": 3, "reserved": []}
    assert "serving" not in viewer_api.get("/api/v1/queue/requests/").json()


def test_a_federated_tenant_filter_finds_the_id_in_either_order(viewer_api, runtime):
    """The doors queue `b|a` as `a|b`; the filter reads it the same way."""
    runtime.enqueue(Request(id="ws:c1:9", tenant_id="a|b", component="ingester"))
    for spelling in ("a|b", "b|a", "b|a|b"):
        body = viewer_api.get("/api/v1/queue/requests/", {"tenant": spelling}).json()
        assert ids(body) == ["ws:c1:9"], spelling


def test_pages_follow_the_cursor_to_the_end(viewer_api, runtime):
    seen: list[str] = []
    params: dict[str, Any] = {"limit": 2}
    while True:
        body = viewer_api.get("/api/v1/queue/requests/", params).json()
        assert body["total"] == 5
        seen += ids(body)
        if body["next"] is None:
            break
        params = {"limit": 2, "cursor": body["next"]}
    assert sorted(seen) == [f"ws:c1:{i}" for i in range(5)] and len(seen) == 5


def test_search_regex_wait_and_frontend_filters_narrow_rows_and_total(viewer_api, runtime):
    get = lambda **p: viewer_api.get("/api/v1/queue/requests/", p).json()  # noqa: E731
    # Rounds over tenants: acme (its slow query first), beta, acme, ...
    assert ids(get(search="RATE(")) == ["ws:c1:3", "ws:c1:0"]
    assert ids(get(regex=r"^count\(")) == ["ws:c1:2"]
    assert get(regex="up", component="ingester")["total"] == 2
    assert ids(get(min_wait="8.5")) == ["ws:c1:1", "ws:c1:0"]
    assert get(frontend="grafana")["total"] == 5 and get(frontend="nobody")["total"] == 0
    assert ids(get(priority="3")) == ["ws:c1:1"]


def test_running_requests_name_their_querier_worker_and_time(viewer_api, runtime):
    worker = runtime.queue.connect_querier("q-1")
    runtime.queue.dequeue("q-1", worker)  # takes the head: beta's or acme's
    runtime.clock.now = 1020.0  # type: ignore[attr-defined]
    body = viewer_api.get("/api/v1/queue/requests/", {"state": "in_flight"}).json()
    assert body["total"] == 1
    (row,) = body["results"]
    assert row["state"] == "in_flight" and row["querier"] == "q-1" and row["worker"] == worker
    assert row["running_seconds"] == 10.0 and row["attempts"] == 1
    every = viewer_api.get("/api/v1/queue/requests/").json()
    assert every["total"] == 5 and every["results"][-1]["state"] == "in_flight"
    detail = viewer_api.get(f"/api/v1/queue/requests/{row['id']}/").json()
    assert detail["querier"] == "q-1"


def test_min_wait_reads_a_running_request_s_queue_wait_not_its_age(viewer_api, runtime):
    worker = runtime.queue.connect_querier("q-1")
    runtime.queue.dequeue("q-1", worker)
    runtime.clock.now = 2000.0  # type: ignore[attr-defined]  # running for 990 s
    (row,) = viewer_api.get("/api/v1/queue/requests/", {"state": "in_flight"}).json()["results"]
    waited = row["wait_seconds"]
    assert waited < 15.0

    def running(min_wait: float) -> int:
        params = {"state": "in_flight", "min_wait": min_wait}
        return viewer_api.get("/api/v1/queue/requests/", params).json()["total"]

    assert running(waited + 0.5) == 0  # it had been enqueued 1,000 s ago, but queued for less
    assert running(waited - 0.5) == 1


@pytest.mark.parametrize(
    "params",
    [
        {"limit": "0"},
        {"limit": "501"},
        {"component": "disk"},
        {"state": "done"},
        {"regex": "a("},
        {"regex": "a" * 1001},
        {"min_wait": "-1"},
        {"priority": "high"},
        {"cursor": "garbage"},
        {"tenant": "team a"},
        {"tenant": "a||b"},
    ],
)
def test_bad_parameters_are_400_naming_the_field(viewer_api, runtime, params):
    response = viewer_api.get("/api/v1/queue/requests/", params)
    assert response.status_code == 400
    assert set(response.json()) == set(params)


def test_a_cursor_is_refused_with_other_filters(viewer_api, runtime):
    first = viewer_api.get("/api/v1/queue/requests/", {"limit": 1}).json()
    other = viewer_api.get("/api/v1/queue/requests/", {"cursor": first["next"], "tenant": "x"})
    assert other.status_code == 400 and "cursor" in other.json()


def test_one_request_and_404_once_it_left(viewer_api, runtime):
    assert viewer_api.get("/api/v1/queue/requests/ws:c1:3/").json()["tenant"] == "beta"
    runtime.cancel("ws:c1:3")
    assert viewer_api.get("/api/v1/queue/requests/ws:c1:3/").status_code == 404


def test_an_editor_cancels_one_request_its_frontend_is_told_and_it_is_recorded(editor_api, runtime):
    handle = runtime.queue.listing().find("ws:c1:2")[0].payload
    response = editor_api.post(
        "/api/v1/queue/requests/ws:c1:2/cancel/", {"note": "runaway"}, format="json"
    )
    assert response.status_code == 200 and response.json()["id"] == "ws:c1:2"
    assert response.json()["state"] == "queued"  # the request as it was
    assert handle.failures == ["cancelled by operator token:editor-bot: runaway"]
    assert len(runtime.queue) == 4
    record = OperatorCancel.objects.get()
    assert (record.request_id, record.cancelled, record.note) == ("ws:c1:2", 1, "runaway")
    assert record.author_name == "token:editor-bot" and record.source == "api"
    again = editor_api.post("/api/v1/queue/requests/ws:c1:2/cancel/", {}, format="json")
    assert again.status_code == 404
    assert OperatorCancel.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [(b"[]", "non_field_errors"), (b'"x"', "non_field_errors"), (b'{"nte": "oops"}', "nte")],
)
def test_a_cancel_whose_body_is_not_an_object_of_its_fields_cancels_nothing(
    editor_api, runtime, body, field
):
    url = "/api/v1/queue/requests/ws:c1:2/cancel/"
    response = editor_api.generic("POST", url, body, content_type="application/json")
    assert response.status_code == 400 and field in response.json()
    assert len(runtime.queue) == 5
    assert not OperatorCancel.objects.exists()


def test_a_viewer_may_not_cancel(viewer_api, runtime):
    assert viewer_api.post("/api/v1/queue/requests/ws:c1:2/cancel/").status_code == 403
    assert viewer_api.post("/api/v1/queue/cancel/", {"tenant": "acme"}).status_code == 403
    assert len(runtime.queue) == 5 and not OperatorCancel.objects.exists()


def test_cancel_by_filter_previews_then_cancels_exactly_the_matching_queued_requests(
    editor_api, runtime
):
    body = {"tenant": "acme", "component": "ingester", "regex": "up", "note": "incident 7"}
    preview = editor_api.post("/api/v1/queue/cancel/", {**body, "dry_run": True}, format="json")
    assert preview.json() == {"matched": 2, "cancelled": 0, "as_of": preview.json()["as_of"]}
    assert len(runtime.queue) == 5 and not OperatorCancel.objects.exists()
    handles = {rid: runtime.queue.listing().find(rid)[0].payload for rid in ("ws:c1:0", "ws:c1:4")}
    done = editor_api.post("/api/v1/queue/cancel/", body, format="json")
    assert done.json() == {"matched": 2, "cancelled": 2}
    remaining = {r.id for r in runtime.queue.listing().queued()}
    assert remaining == {"ws:c1:1", "ws:c1:2", "ws:c1:3"}
    for handle in handles.values():
        assert handle.failures == ["cancelled by operator token:editor-bot: incident 7"]
    record = OperatorCancel.objects.get()
    assert record.filter == {"tenant": "acme", "component": "ingester", "regex": "up"}
    assert (record.matched, record.cancelled, record.request_id) == (2, 2, "")


def test_a_cancel_by_filter_that_matches_nothing_records_nothing(editor_api, runtime):
    done = editor_api.post("/api/v1/queue/cancel/", {"tenant": "nobody"}, format="json")
    assert done.json() == {"matched": 0, "cancelled": 0}
    assert len(runtime.queue) == 5 and not OperatorCancel.objects.exists()


@pytest.mark.parametrize(
    "narrowing",
    [
        {"min_wait": 8.5},
        {"min_wait": "7.5", "search": "up"},
        {"frontend": "grafana", "component": "ingester"},
        {"actor": "users"},
        {"priority": 3},
    ],
)
def test_cancel_by_filter_takes_every_listing_filter_and_cancels_what_the_listing_shows(
    editor_api, runtime, narrowing
):
    body = {"tenant": "acme", **narrowing}
    listed = ids(editor_api.get("/api/v1/queue/requests/", {**body, "state": "queued"}).json())
    preview = editor_api.post("/api/v1/queue/cancel/", {**body, "dry_run": True}, format="json")
    assert preview.status_code == 200, preview.json()
    assert (preview.json()["matched"], preview.json()["cancelled"]) == (len(listed), 0)
    done = editor_api.post("/api/v1/queue/cancel/", body, format="json")
    assert done.json() == {"matched": len(listed), "cancelled": len(listed)}
    remaining = {r.id for r in runtime.queue.listing().queued()}
    assert remaining == {f"ws:c1:{i}" for i in range(5)} - set(listed)
    # A cancel that found nothing is not recorded.
    assert [r.filter for r in OperatorCancel.objects.all()] == ([body] if listed else [])


@pytest.mark.parametrize(
    "body, field",
    [
        ({"component": "ingester"}, "non_field_errors"),
        ({"tenant": "acme", "state": "in_flight"}, "state"),
        ({"tenant": "acme", "regex": "("}, "regex"),
        ({"tenant": "acme", "min_wait": -1}, "min_wait"),
        ({"tenant": "acme", "colour": "red"}, "colour"),
        ({"tenant": "acme", "dry_run": "yes"}, "dry_run"),
    ],
)
def test_a_cancel_by_filter_without_a_narrow_enough_filter_is_400(editor_api, runtime, body, field):
    response = editor_api.post("/api/v1/queue/cancel/", body, format="json")
    assert response.status_code == 400 and field in response.json()
    assert len(runtime.queue) == 5 and not OperatorCancel.objects.exists()


def test_without_a_runtime_lists_are_empty_and_lookups_404(viewer_api, editor_api):
    body = viewer_api.get("/api/v1/queue/requests/").json()
    assert body == {"running": False, "results": [], "next": None, "total": 0}
    assert viewer_api.get("/api/v1/queue/requests/x/").status_code == 404
    assert editor_api.post("/api/v1/queue/requests/x/cancel/").status_code == 404
