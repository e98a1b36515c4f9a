"""`queue/` and `queriers/` with peer replicas: the whole service, attributed per replica."""

from __future__ import annotations

import json
import time

import pytest

from api.cluster.replicas import summarize
from api.wire import runtime_host
from api.wire.frontends import FrontendRow
from scheduler_core.model import QueueConfig, Request, TenantLimits
from scheduler_core.priority import QueryPriority
from scheduler_core.runtime import SchedulerRuntime
from scheduler_core.snapshot import LeafSnapshot, QuerierSnapshot, QueueSnapshot, WorkerSnapshot
from tests.fakes import FakeClock


def peer_summary(
    replica: str, frontends: list[FrontendRow] | None = None, tenants: tuple[str, ...] = ("team-a",)
) -> bytes:
    """Peer `replica`: each of `tenants` has 2 queued on ingester, querier q-1 idle there."""
    worker = WorkerSnapshot("q-1", 0, None, None, None, None, 10.0, True)
    snap = QueueSnapshot(
        taken_at=12.0,
        layout="tenant-querier-component",
        component_selection="round-robin",
        total=2 * len(tenants),
        leaves=tuple(LeafSnapshot(t, "ingester", 2, ((0, 2),), 2.0) for t in tenants),
        tenants=(),
        queriers=(QuerierSnapshot("q-1", (worker,), False, True, None, (), False),),
    )
    raw = summarize(snap, replica=replica, wall_time=time.time(), stats=None, frontends=frontends)
    return json.dumps(raw).encode()


@pytest.fixture
def local_runtime(monkeypatch: pytest.MonkeyPatch) -> SchedulerRuntime:
    runtime = SchedulerRuntime(QueueConfig(), clock=FakeClock(100.0))
    runtime.queue.enqueue(Request(id="r1", tenant_id="team-a", component="ingester"))
    runtime.queue.connect_querier("q-1")
    monkeypatch.setattr(runtime_host, "started", lambda: True)
    monkeypatch.setattr(runtime_host, "get_runtime", lambda: runtime)
    return runtime


def test_the_queue_adds_up_every_replica_and_says_how_many(viewer_api, local_runtime, board):
    board.accept([peer_summary("replica-b")])
    body = viewer_api.get("/api/v1/queue/").json()
    assert body["total"] == 3
    (row,) = body["tenants"]
    assert row["tenant_id"] == "team-a" and row["length"] == 3
    assert body["replicas"]["count"] == 2
    assert body["replicas"]["ids"] == ["replica-a", "replica-b"]
    assert body["replicas"]["note"].startswith("2 replicas, peers' data ≤")


def test_a_tenant_queued_only_on_a_peer_shows_the_limits_this_replicas_config_gives_it(
    viewer_api, local_runtime, board
):
    local_runtime.set_config(QueueConfig(max_outstanding_requests_per_tenant=250))
    local_runtime.set_tenant_limits(
        "team-b", TenantLimits(max_outstanding=30, query_priority=QueryPriority(enabled=True))
    )
    board.accept([peer_summary("replica-b", tenants=("tb", "team-b|zz"))])
    rows = {row["tenant_id"]: row for row in viewer_api.get("/api/v1/queue/").json()["tenants"]}
    tb, federated = rows["tb"], rows["team-b|zz"]
    assert tb["length"] == 2
    assert (tb["max_outstanding"], tb["priority_enabled"]) == (250, False)
    # A federated ID's limits derive from its tenants', as on the replica queueing it.
    assert (federated["max_outstanding"], federated["priority_enabled"]) == (30, True)


def test_each_querier_connection_names_its_replica(viewer_api, local_runtime, board):
    board.accept([peer_summary("replica-b")])
    body = viewer_api.get("/api/v1/queriers/").json()
    assert body["count"] == 2
    rows = [(q["querier_id"], q["replica"]) for q in body["queriers"]]
    assert rows == [("q-1", "replica-a"), ("q-1", "replica-b")]
    assert body["replicas"]["count"] == 2


def test_a_lone_replica_answers_exactly_as_before(viewer_api, local_runtime, board):
    board.accept([])
    queue = viewer_api.get("/api/v1/queue/").json()
    queriers = viewer_api.get("/api/v1/queriers/").json()
    assert "replicas" not in queue and "replicas" not in queriers
    assert queue["total"] == 1
    assert "replica" not in queriers["queriers"][0]


def test_frontends_of_every_replica_are_listed_each_naming_its_replica(
    viewer_api, local_runtime, board, monkeypatch
):
    local = FrontendRow("websocket", "10.0.0.1:5000", "fe-token", 1, 1, 30.0)
    monkeypatch.setattr(runtime_host, "frontends", lambda: [local])
    peer = FrontendRow("grpc", "10.0.0.9:9095", "", 4, 2, None)
    board.accept([peer_summary("replica-b", [peer]), peer_summary("replica-c")])
    body = viewer_api.get("/api/v1/queriers/").json()
    rows = [(f["transport"], f["address"], f["replica"]) for f in body["frontends"]]
    assert rows == [
        ("websocket", "10.0.0.1:5000", "replica-a"),
        ("grpc", "10.0.0.9:9095", "replica-b"),
    ]
    assert body["frontends_missing"] == ["replica-c"]


def test_a_lone_replica_lists_its_frontends_without_replica_names(
    viewer_api, local_runtime, board, monkeypatch
):
    local = FrontendRow("grpc", "10.0.0.2:9095", "", 2, 0, None)
    monkeypatch.setattr(runtime_host, "frontends", lambda: [local])
    board.accept([])
    body = viewer_api.get("/api/v1/queriers/").json()
    assert [f["address"] for f in body["frontends"]] == ["10.0.0.2:9095"]
    assert "replica" not in body["frontends"][0] and "frontends_missing" not in body
