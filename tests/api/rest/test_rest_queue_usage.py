"""`queue/usage/`: tenants by querier time, live from the runtime, summed over replicas."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest

from api.cluster.replica_usage import finish_block
from api.cluster.replicas import summarize
from api.wire import runtime_host
from api.wire.usage_block import UsagePages
from scheduler_core.model import QueueConfig, Request
from scheduler_core.runtime import SchedulerRuntime
from scheduler_core.snapshot import QueueSnapshot
from scheduler_core.tenant_usage import TenantUsage
from tests.fakes import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1000.0)


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch, clock: FakeClock) -> SchedulerRuntime:
    """A runtime whose tenant `slow` ran 8 s and still runs one; `fast` ran 0.2 s."""
    runtime = SchedulerRuntime(QueueConfig(), clock=clock)
    usage = TenantUsage(clock=clock)
    queue = runtime.queue
    for _ in range(2):
        queue.connect_querier("q-1")
    for n, (tenant, seconds) in enumerate([("slow", 8.0), ("fast", 0.2), ("slow", None)]):
        request = Request(id=f"r{n}", tenant_id=tenant)
        queue.enqueue(request)
        taken, _ = queue.dequeue("q-1", 0 if seconds is not None else 1)
        assert taken is request
        usage.on_dispatched(request, "q-1", 0, 0.0)
        if seconds is not None:
            clock.now += seconds
            queue.complete(request.id)
            usage.on_completed(request)
    clock.now += 3.0  # the running one has held its worker 3 s
    host = SimpleNamespace(usage_block=UsagePages(usage, queue, clock).block)
    monkeypatch.setattr(runtime_host, "started", lambda: True)
    monkeypatch.setattr(runtime_host, "get_runtime", lambda: runtime)
    monkeypatch.setattr(runtime_host, "get_host", lambda: host)
    return runtime


def test_the_tenant_holding_the_queriers_longest_comes_first(viewer_api, served, board):
    board.accept([])
    body = viewer_api.get("/api/v1/queue/usage/").json()
    assert body["running"] is True and "replicas" not in body
    assert [r["tenant"] for r in body["tenants"]] == ["slow", "fast"]
    slow, fast = body["tenants"]
    assert (slow["querier_seconds"], slow["dispatched"], slow["running"]) == (11.0, 2, 1)
    assert (fast["querier_seconds"], fast["ended"]) == (0.2, 1)
    assert body["querier_seconds"] == 11.2 and body["workers"] == 2
    assert slow["share"] == pytest.approx(11.0 / 11.2, abs=1e-4)
    assert slow["workers_held"] == pytest.approx(11.0 / body["span_seconds"], abs=1e-3)
    assert viewer_api.get("/api/v1/queue/usage/?limit=1").json()["tenants"][0]["tenant"] == "slow"


def peer(replica: str, usage: dict) -> bytes:
    snap = QueueSnapshot(1.0, "tenant-first", "round-robin", 0, (), (), ())
    raw = summarize(snap, replica=replica, wall_time=time.time(), stats={"usage": usage})
    return json.dumps(raw).encode()


def test_with_peers_each_tenant_is_summed_over_the_replicas(viewer_api, served, board):
    fast = {
        "tenant": "fast",
        "querier_seconds": 20.0,
        "dispatched": 100,
        "ended": 100,
        "running": 0,
        "wait_mean_seconds": 0.01,
        "wait_max_seconds": 0.2,
        "rejected": 0,
    }
    usage = finish_block(
        {
            "window_seconds": 60.0,
            "span_seconds": 60.0,
            "querier_seconds": 20.0,
            "workers": 4,
            "tenant_count": 1,
            "tenants": [fast],
        }
    )
    board.accept([peer("replica-b", usage)])
    body = viewer_api.get("/api/v1/queue/usage/").json()
    assert [(r["tenant"], r["querier_seconds"]) for r in body["tenants"]] == [
        ("fast", 20.2),
        ("slow", 11.0),
    ]
    assert body["workers"] == 6 and body["replicas"]["count"] == 2


def test_without_a_runtime_in_this_process_it_says_so(viewer_api):
    body = viewer_api.get("/api/v1/queue/usage/").json()
    assert body["running"] is False and body["tenants"] == []


@pytest.mark.parametrize("limit", ["0", "501", "ten", "1.5"])
def test_a_bad_limit_is_400_naming_the_field(viewer_api, served, limit):
    response = viewer_api.get(f"/api/v1/queue/usage/?limit={limit}")
    assert response.status_code == 400
    assert "limit" in json.dumps(response.json())


def test_it_needs_a_login(anon_api):
    assert anon_api.get("/api/v1/queue/usage/").status_code in (401, 403)
