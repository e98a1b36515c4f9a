"""The live inspector in scale-out mode: one view of every replica, attributed.

The local queue is a real `RequestQueue` on a fake clock; the peer arrives
as an encoded summary, exactly as the replica board reads it from Redis.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from django.test import Client

from api.cluster import replica_board
from api.cluster.replica_board import ReplicaBoard
from api.cluster.replicas import MergedView, summarize
from api.wire import runtime_host
from api.wire.frontends import FrontendRow, WebsocketFrontends
from api.wire.usage_block import UsagePages
from dashboard import live
from dashboard.live import Broadcaster, Tick
from dashboard.wire import frontends_from_wire
from scheduler_core.model import INGESTER, QueueConfig, Request
from scheduler_core.queue import RequestQueue
from scheduler_core.runtime import SchedulerRuntime
from scheduler_core.snapshot import LeafSnapshot, QuerierSnapshot, QueueSnapshot, WorkerSnapshot
from scheduler_core.stats import RollingStats
from scheduler_core.tenant_usage import TenantUsage


def local_queue() -> RequestQueue:
    queue = RequestQueue(QueueConfig(), clock=lambda: 100.0)
    queue.enqueue(Request(id="r1", tenant_id="acme", component=INGESTER))
    queue.connect_querier("q-1")
    return queue


def peer_bytes(
    replica: str,
    published: float,
    rates: dict[str, float],
    frontends: list[FrontendRow] | None = None,
) -> bytes:
    worker = WorkerSnapshot("q-1", 0, None, None, None, None, 4.0, True)
    snap = QueueSnapshot(
        taken_at=5.0,
        layout="tenant-querier-component",
        component_selection="round-robin",
        total=4,
        leaves=(LeafSnapshot("acme", INGESTER, 4, ((0, 4),), 1.0),),
        tenants=(),
        queriers=(QuerierSnapshot("q-1", (worker,), False, True, None, (), False),),
    )
    stats = {"rates": rates, "frontends": 2, "wait_by_component": {}, "wait_by_priority": {}}
    raw = summarize(snap, replica=replica, wall_time=published, stats=stats, frontends=frontends)
    return json.dumps(raw).encode()


class MergedSource:
    """A scale-out source: the merged snapshot plus its replica view."""

    def __init__(self, view: MergedView, frontends: list[FrontendRow] | None = None) -> None:
        self.view = view
        self.rows = frontends or []

    def frontends(self) -> list[FrontendRow]:
        return self.rows

    def snapshot(self) -> QueueSnapshot:
        return self.view.snapshot

    def stats(self) -> Mapping[str, Any] | None:
        return None

    def replicas(self) -> MergedView:
        return self.view


def merged_view(wall: float, peer_frontends: list[FrontendRow] | None = None) -> MergedView:
    board = ReplicaBoard("a")
    board.accept([peer_bytes("b", wall - 0.3, {"dispatched": 1.0}, peer_frontends)])
    view = board.view(local_queue().snapshot(), wall)
    assert view is not None
    return view


def test_a_tick_of_a_merged_view_counts_replicas_and_attributes_queriers() -> None:
    wall = 1_700_000_000.0
    view = merged_view(wall)
    tick = Tick(1, view.snapshot, None, wall_time=wall, replicas=view)
    header = json.loads(tick.header)
    assert header["total"] == 5
    assert header["replicas"]["note"] == "2 replicas, peers' data ≤1 s old"
    panel = json.loads(tick.queriers)
    assert [(q["id"], q["replica"]) for q in panel["queriers"]] == [("q-1", "a"), ("q-1", "b")]
    assert panel["total"] == 2  # rows: one per replica it is connected to
    # The header counts queriers: q-1 on both replicas is one.
    assert header["queriers"] == 1
    assert header["workers_total"] == 2  # its workers on each replica add up


def test_the_broadcaster_takes_the_replica_view_from_its_source() -> None:
    wall = 1_700_000_000.0
    broadcaster = Broadcaster(MergedSource(merged_view(wall)), autostart=False)
    tick = broadcaster.latest()
    assert tick is not None and json.loads(tick.header)["replicas"]["count"] == 2


class PlainSource:
    """A single-process source: no replicas at all."""

    def snapshot(self) -> QueueSnapshot:
        return local_queue().snapshot()

    def stats(self) -> Mapping[str, Any] | None:
        return None


def test_a_source_without_replicas_keeps_the_single_process_header() -> None:
    tick = Broadcaster(PlainSource(), autostart=False).latest()
    assert tick is not None
    assert "replicas" not in json.loads(tick.header)
    assert "replica" not in json.loads(tick.queriers)["queriers"][0]


class FakeHost:
    def __init__(self, runtime: SchedulerRuntime) -> None:
        self.runtime = runtime
        self.stats = RollingStats(clock=lambda: 100.0)
        self.websocket_frontends = WebsocketFrontends()
        self.usage = TenantUsage(clock=lambda: 100.0)
        self.usage_block = UsagePages(self.usage, runtime.queue, clock=lambda: 100.0).block

    def load(self) -> dict[str, float | None]:
        return {
            "window": 10.0,
            "busy": 0.25,
            "process_cpu": 0.3,
            "lag_max": 0.001,
            "dispatched": 0.0,
            "cpu_per_query_us": None,
        }


def test_a_source_naming_a_hung_peer_puts_it_in_the_header() -> None:
    class Lonely(PlainSource):
        def replicas_down(self) -> list[str]:
            return ["b"]

    tick = Broadcaster(Lonely(), autostart=False).latest()
    assert tick is not None
    header = json.loads(tick.header)
    assert header["replicas_down"] == ["b"] and "replicas" not in header


def test_the_runtime_source_merges_peers_and_sums_their_rates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime = SchedulerRuntime(QueueConfig(), clock=lambda: 100.0)
    runtime.queue.enqueue(Request(id="r1", tenant_id="acme", component=INGESTER))
    board = ReplicaBoard("a")
    board.accept([peer_bytes("b", time.time(), {"dispatched": 3.0})])
    monkeypatch.setattr(replica_board, "_board", board)
    monkeypatch.setattr(runtime_host, "started", lambda: True)
    monkeypatch.setattr(runtime_host, "get_runtime", lambda: runtime)
    host = FakeHost(runtime)
    host.usage.on_dispatched(Request(id="r0", tenant_id="acme"), "q", 0, 0.5)
    monkeypatch.setattr(runtime_host, "get_host", lambda: host)
    rows = [FrontendRow("websocket", "10.0.0.1:5000", "fe", 1, 0, 2.0)]
    monkeypatch.setattr(runtime_host, "frontends", lambda: rows)
    source = live._runtime_source()
    snapshot = source.snapshot()
    assert snapshot is not None and snapshot.total == 5
    stats = source.stats()
    assert stats is not None
    assert stats["rates"]["dispatched"] == 3.0 and stats["frontends"] == 3
    # The peer published no loop figures nor usage (an older version): this replica's stand.
    assert stats["load"]["busy"] == 0.25
    assert [(r["tenant"], r["dispatched"]) for r in stats["usage"]["tenants"]] == [("acme", 1)]
    replicas = source.replicas()  # type: ignore[attr-defined]
    assert replicas is not None and replicas.replicas == ("a", "b")
    assert source.frontends() == rows  # type: ignore[attr-defined]


def test_in_scale_out_the_frontends_panel_says_its_rows_are_this_replicas() -> None:
    wall = 1_700_000_000.0
    view = merged_view(wall)
    rows = [FrontendRow("grpc", "10.0.0.2:7000", "", 3, 4, None)]
    tick = Tick(1, view.snapshot, None, wall_time=wall, replicas=view, frontends=rows)
    panel = frontends_from_wire(json.loads(tick.frontends))
    assert panel["local_only"] is True
    assert [f["address"] for f in panel["frontends"]] == ["10.0.0.2:7000"]


def test_a_merged_tick_lists_every_replicas_frontends_each_with_its_replica() -> None:
    wall = 1_700_000_000.0
    view = merged_view(wall, [FrontendRow("websocket", "10.0.0.7:4000", "fe", 1, 1, 2.0)])
    rows = [FrontendRow("grpc", "10.0.0.2:7000", "", 3, 4, None)]
    tick = Tick(1, view.snapshot, None, wall_time=wall, replicas=view, frontends=rows)
    panel = frontends_from_wire(json.loads(tick.frontends))
    assert [(f["address"], f["replica"]) for f in panel["frontends"]] == [
        ("10.0.0.2:7000", "a"),
        ("10.0.0.7:4000", "b"),
    ]
    assert panel["frontends"][1]["for"] == 2.3  # published 0.3 s before the tick
    assert (panel["total"], panel["outstanding"], panel["local_only"]) == (2, 5, False)
    assert (panel["replicas"], panel["missing"]) == (["a", "b"], [])


def test_when_the_peer_goes_away_its_frontends_leave_the_panel() -> None:
    wall = 1_700_000_000.0
    board = ReplicaBoard("a")
    board.accept([peer_bytes("b", wall, {}, [FrontendRow("grpc", "10.0.0.7:9", "", 1, 0, None)])])
    local = local_queue().snapshot()
    later = wall + replica_board.STALE_SECONDS + 0.1
    assert board.view(local, later) is None  # single-replica again: the plain panel
    tick = Tick(1, local, None, wall_time=later, replicas=board.view(local, later))
    assert json.loads(tick.frontends) == {
        "total": 0,
        "hidden": 0,
        "outstanding": 0,
        "local_only": False,
        "frontends": [],
    }


@pytest.fixture
def merged_page() -> Iterator[None]:
    wall = time.time()
    peer_rows = [FrontendRow("websocket", "10.0.0.7:4000", "fe-b", 1, 1, 2.0)]
    local_rows = [FrontendRow("grpc", "10.0.0.2:7000", "", 3, 4, None)]
    source = MergedSource(merged_view(wall, peer_rows), local_rows)
    live.install_broadcaster(Broadcaster(source, autostart=False))
    yield
    live.install_broadcaster(None)


@pytest.mark.django_db
def test_the_page_renders_the_replica_column_when_several_replicas_run(
    viewer_client: Client, merged_page: None
) -> None:
    html = viewer_client.get("/").content.decode()
    assert '<th scope="col" id="frontends-replica" >Replica</th>' in html
    assert 'data-frontend="grpc 10.0.0.2:7000 a"' in html
    assert 'aria-label="websocket frontend 10.0.0.7:4000 on replica b: 1 outstanding"' in html
    assert '<td class="replica" dir="auto">b</td>' in html
    assert "2 total · 5 outstanding" in html
