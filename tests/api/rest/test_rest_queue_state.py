"""`queue/` and `queriers/`: the live snapshot, paged and filtered on the server."""

from __future__ import annotations

import pytest

from api.rest.views.runtime_state import queriers_view, queue_view
from api.wire import runtime_host
from scheduler_core.model import (
    PriorityDef,
    QueryAttribute,
    QueryPriority,
    QueueConfig,
    Request,
    TenantLimits,
)
from scheduler_core.queue import RequestQueue
from scheduler_core.runtime import SchedulerRuntime
from tests.fakes import FakeClock, clocked_queue


def _queue() -> tuple[RequestQueue, FakeClock]:
    queue, clock = clocked_queue(100.0)
    reserved = QueryPriority(
        enabled=True, priorities=[PriorityDef(5, 1, [QueryAttribute(regex="vip")])]
    )
    queue.set_tenant_limits("big", TenantLimits(max_queriers=0, query_priority=reserved))
    depths = {"big": 6, "mid": 3, "small-1": 1, "small-2": 1}
    for tenant, depth in depths.items():
        for i in range(depth):
            component = "store-gateway" if i % 3 == 2 else "ingester"
            queue.enqueue(Request(id=f"{tenant}-{i}", tenant_id=tenant, component=component))
    clock.now = 130.0
    return queue, clock


def test_the_deepest_tenants_come_first_and_the_rest_are_aggregated():
    queue, _ = _queue()
    view = queue_view(queue.snapshot(), limit=2)
    assert [row["tenant_id"] for row in view["tenants"]] == ["big", "mid"]
    assert view["total"] == 11 and view["tenant_count"] == 4
    assert view["others"] == {
        "tenants": 2,
        "length": 2,
        "by_component": {
            "ingester": 2,
            "store-gateway": 0,
            "ingester-and-store-gateway": 0,
            "unknown": 0,
        },
    }
    big = view["tenants"][0]
    assert big["length"] == 6 and big["priority_enabled"] is True
    ingester = next(c for c in big["components"] if c["component"] == "ingester")
    assert ingester["length"] == 4 and ingester["oldest_wait_seconds"] == 30.0
    assert ingester["by_priority"] == {"0": 4}


def test_filters_by_tenant_substring_and_component():
    queue, _ = _queue()
    view = queue_view(queue.snapshot(), search="SMALL", component="ingester")
    assert [row["tenant_id"] for row in view["tenants"]] == ["small-1", "small-2"]
    assert view["by_component"]["store-gateway"] == 3  # whole-queue totals stay
    only_store = queue_view(queue.snapshot(), component="store-gateway")
    assert [(r["tenant_id"], r["length"]) for r in only_store["tenants"][:2]] == [
        ("big", 2),
        ("mid", 1),
    ]


def test_queriers_show_busy_workers_and_reserved_idle_ones_first():
    queue, clock = _queue()
    for querier in ("q-2", "q-1"):
        queue.connect_querier(querier)
    worker = queue.connect_querier("q-2")
    queue.dequeue("q-2", worker)
    clock.now = 140.0
    view = queriers_view(queue.snapshot())
    assert view["count"] == 2
    assert view["reserved_idle"] == ["q-1"]
    first, second = view["queriers"]
    assert first["querier_id"] == "q-1" and first["reserved_idle"]
    assert first["reservations"] == [{"tenant_id": "big", "priority": 5}]
    assert second["busy_workers"] == 1
    busy = next(w for w in second["workers"] if w["state"] == "busy")
    assert busy["tenant_id"] == "big" and busy["seconds_in_state"] == 10.0
    only = queriers_view(queue.snapshot(), reserved_idle_only=True)
    assert [q["querier_id"] for q in only["queriers"]] == ["q-1"]


def test_without_a_runtime_in_this_process_the_answer_says_so(viewer_api):
    body = viewer_api.get("/api/v1/queue/").json()
    assert body["running"] is False and body["tenants"] == [] and body["total"] == 0
    assert viewer_api.get("/api/v1/queriers/").json()["running"] is False


def test_the_endpoints_serve_the_running_runtime(viewer_api, monkeypatch):
    runtime = SchedulerRuntime(QueueConfig(), clock=FakeClock(100.0))
    runtime.queue.enqueue(Request(id="r1", tenant_id="team-a", component="ingester"))
    monkeypatch.setattr(runtime_host, "started", lambda: True)
    monkeypatch.setattr(runtime_host, "get_runtime", lambda: runtime)
    body = viewer_api.get("/api/v1/queue/", {"search": "team", "limit": 5}).json()
    assert body["running"] is True and body["total"] == 1
    assert body["tenants"][0]["tenant_id"] == "team-a"
    assert viewer_api.get("/api/v1/queriers/").json()["count"] == 0


@pytest.mark.parametrize(
    "params", [{"limit": "0"}, {"limit": "501"}, {"limit": "x"}, {"component": "disk"}]
)
def test_bad_paging_parameters_are_400(viewer_api, params):
    response = viewer_api.get("/api/v1/queue/", params)
    assert response.status_code == 400
    assert set(response.json()) == set(params)
