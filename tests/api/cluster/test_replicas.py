"""Replica summaries: the format round-trips, and the merge adds replicas up correctly.

Pure functions on hand-built snapshots, no Redis: each replica's queue clock
is different (here local 1000.0, peer 50.0), so these tests also pin that
only ages cross replicas. The replica board that holds peers' summaries is
tested in test_replica_board.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from api.cluster.replica_frontends import ReplicaFrontends
from api.cluster.replica_stats import (
    MAX_FRONTEND_ADDRESSES,
    grpc_frontend_addresses,
    local_stats,
    merge_stats,
)
from api.cluster.replicas import (
    MalformedSummary,
    PeerSummary,
    merge,
    summarize,
)
from api.wire.frontends import FrontendRow
from scheduler_core.model import Request
from scheduler_core.snapshot import (
    LeafSnapshot,
    QuerierSnapshot,
    Reservation,
    TenantSnapshot,
    WorkerSnapshot,
)
from scheduler_core.stats import RollingStats
from tests.api.cluster.replica_summaries import WALL, peer, snapshot
from tests.fakes import FakeClock


def querier(querier_id: str, *, busy_since: float | None, clock: float) -> QuerierSnapshot:
    worker = WorkerSnapshot(
        querier_id,
        0,
        "r1" if busy_since is not None else None,
        "acme" if busy_since is not None else None,
        "ingester" if busy_since is not None else None,
        5 if busy_since is not None else None,
        busy_since if busy_since is not None else clock,
        busy_since is None,
    )
    return QuerierSnapshot(
        querier_id,
        (worker,),
        shutting_down=False,
        connected=True,
        disconnected_at=None,
        reservations=(Reservation("acme", 5, querier_id),),
        reserved_idle=False,
    )


def test_summaries_carry_only_queued_leaves_and_ages_not_clock_readings() -> None:
    snap = snapshot(
        50.0,
        [
            LeafSnapshot("acme", "ingester", 3, ((5, 1), (0, 2)), 48.0),
            LeafSnapshot("idle", "ingester", 0, (), 50.0),
        ],
    )
    raw = summarize(snap, replica="b", wall_time=WALL, stats=None)
    assert raw["leaves"] == [["acme", "ingester", 3, [5, 1, 0, 2], 2.0]]
    assert raw["total"] == 3 and raw["id"] == "b" and raw["at"] == WALL


def test_same_leaf_on_two_replicas_sums_lengths_and_priorities_and_keeps_the_oldest() -> None:
    local = snapshot(1000.0, [LeafSnapshot("acme", "ingester", 2, ((5, 1), (1, 1)), 999.0)])
    remote = snapshot(50.0, [LeafSnapshot("acme", "ingester", 4, ((1, 4),), 45.0)])
    view = merge(local, "a", [peer("b", remote, published=WALL - 0.5)], WALL)
    (leaf,) = view.snapshot.leaves
    assert leaf.length == 6
    assert leaf.by_priority == ((5, 1), (1, 5))
    # The peer's request waited 5 s when published, 0.5 s ago: 5.5 s on our clock.
    assert leaf.oldest_enqueued_at == pytest.approx(1000.0 - 5.5)
    assert view.snapshot.total == 6


def test_a_tenant_queued_only_on_a_peer_appears_with_its_length() -> None:
    local = snapshot(
        1000.0,
        [],
        tenants=[TenantSnapshot("acme", 0, 100, None, (), True)],
    )
    remote = snapshot(50.0, [LeafSnapshot("beta", "store-gateway", 7, ((0, 7),), 49.0)])
    view = merge(local, "a", [peer("b", remote, published=WALL)], WALL)
    lengths = {t.tenant_id: t.length for t in view.snapshot.tenants}
    assert lengths == {"acme": 0, "beta": 7}
    assert view.snapshot.tenants[0].max_outstanding == 100  # local settings kept


def test_queriers_are_listed_once_per_replica_they_are_connected_to() -> None:
    local = snapshot(1000.0, [], queriers=[querier("q1", busy_since=None, clock=1000.0)])
    remote = snapshot(50.0, [], queriers=[querier("q1", busy_since=47.0, clock=50.0)])
    view = merge(local, "a", [peer("b", remote, published=WALL - 1.0)], WALL)
    assert [q.querier_id for q in view.snapshot.queriers] == ["q1", "q1"]
    assert view.querier_replicas == ("a", "b")
    remote_worker = view.snapshot.queriers[1].workers[0]
    assert (remote_worker.request_id, remote_worker.priority) == ("r1", 5)
    # Busy 3 s when published 1 s ago: busy since 4 s before our "now".
    assert remote_worker.since == pytest.approx(996.0)
    assert view.snapshot.queriers[1].reservations == (Reservation("acme", 5, "q1"),)


def test_the_header_counts_replicas_and_says_how_old_peers_data_is() -> None:
    local = snapshot(1000.0, [])
    peers = [
        peer("b", snapshot(1.0, []), published=WALL - 0.4),
        peer("c", snapshot(2.0, []), published=WALL - 0.8),
    ]
    header = merge(local, "a", peers, WALL).header()
    assert header["count"] == 3 and header["ids"] == ["a", "b", "c"]
    assert header["missing"] == []
    assert header["peers_max_age"] == pytest.approx(0.8)
    assert header["note"] == "3 replicas, peers' data ≤1 s old"


def test_a_summary_carries_frontends_only_when_given_them() -> None:
    snap = snapshot(50.0, [])
    assert "frontends" not in summarize(snap, replica="b", wall_time=WALL, stats=None)
    row = FrontendRow("grpc", "10.0.0.9:9", "", 2, 1, None)
    raw = summarize(snap, replica="b", wall_time=WALL, stats=None, frontends=[row])
    assert raw["frontends"] == [1, 1, [["grpc", "10.0.0.9:9", "", 2, 1, None]]]
    assert PeerSummary.parse(json.loads(json.dumps(raw))).frontends == ReplicaFrontends(
        "b", 1, 1, (row,)
    )


def test_peers_frontends_are_merged_with_ages_as_of_now_and_silent_peers_named() -> None:
    rows = [FrontendRow("websocket", "10.0.0.1:5000", "fe", 1, 2, 4.0)]
    remote = snapshot(50.0, [])
    with_rows = summarize(remote, replica="b", wall_time=WALL - 0.5, stats=None, frontends=rows)
    peers = [
        PeerSummary.parse(json.loads(json.dumps(with_rows))),
        peer("c", remote, published=WALL - 0.2),  # an older replica: no frontends block
    ]
    view = merge(snapshot(1000.0, []), "a", peers, WALL)
    assert view.local == "a"
    (published,) = view.peer_frontends
    assert (published.replica, published.total, published.outstanding) == ("b", 1, 2)
    # Connected 4 s when published half a second ago: 4.5 s now.
    assert published.rows[0].connected_for == pytest.approx(4.5)
    assert view.frontends_missing == ("c",)


def test_a_merge_of_peers_that_all_publish_frontends_misses_none() -> None:
    remote = snapshot(50.0, [])
    raw = summarize(remote, replica="b", wall_time=WALL, stats=None, frontends=[])
    view = merge(snapshot(1000.0, []), "a", [PeerSummary.parse(raw)], WALL)
    assert view.peer_frontends == (ReplicaFrontends("b", 0, 0, ()),)
    assert view.frontends_missing == ()


def test_a_summary_with_a_malformed_frontends_block_is_refused() -> None:
    raw = summarize(snapshot(1.0, []), replica="b", wall_time=WALL, stats=None, frontends=[])
    with pytest.raises(MalformedSummary):
        PeerSummary.parse({**raw, "frontends": [1, 0, [["pigeon", "x", "", 1, 0, None]]]})


def test_merged_stats_sum_rates_and_frontends_and_show_the_worst_waits() -> None:
    local = {
        "window": 60.0,
        "rates": {"dispatched": 10.0, "rejected": 0.5},
        "frontends": 2,
        "wait_by_component": {"ingester": [0.01, 0.2, 100]},
        "wait_by_priority": {"0": [0.01, 0.2, 100]},
    }
    remote = {
        "rates": {"dispatched": 5.0, "rejected": 1.0},
        "frontends": 3,
        "wait_by_component": {"ingester": [0.02, 0.1, 50], "store-gateway": [1.0, 4.0, 5]},
        "wait_by_priority": {"0": [0.02, 0.1, 50]},
    }
    merged = merge_stats(local, [peer("b", snapshot(1.0, []), published=WALL, stats=remote)])
    assert merged is not None
    assert merged["rates"] == {"dispatched": 15.0, "rejected": 1.5}
    assert merged["frontends"] == 5
    assert merged["wait_by_component"]["ingester"] == [0.02, 0.2, 150]
    assert merged["wait"] == {"p50": 1.0, "p99": 4.0}
    assert merged["window"] == 60.0


def frontend_stats(websocket: int, grpc: list[str]) -> dict[str, Any]:
    rows = [
        FrontendRow("websocket", f"10.0.0.1:{5000 + i}", "", 1, 0, 1.0) for i in range(websocket)
    ]
    rows += [FrontendRow("grpc", address, "", 2, 0, 1.0) for address in grpc]
    clock = RollingStats(clock=lambda: 100.0)
    return local_stats(clock, frontends=len(rows), frontend_addresses=grpc_frontend_addresses(rows))


def test_a_cortex_frontend_connected_to_every_replica_counts_once() -> None:
    local = frontend_stats(1, ["frontend-0:9095", "frontend-1:9095"])
    assert local["frontend_addresses"] == ["frontend-0:9095", "frontend-1:9095"]
    peers = [
        peer("b", snapshot(1.0, []), published=WALL, stats=frontend_stats(2, ["frontend-1:9095"])),
        peer("c", snapshot(1.0, []), published=WALL, stats=frontend_stats(0, ["frontend-2:9095"])),
    ]
    merged = merge_stats(local, peers, "a")
    assert merged is not None
    # Websocket connections have no identity across replicas: 1 + 2 of them.
    assert merged["frontends"] == 3 + 3


def test_frontends_past_the_published_cap_still_count_once_per_replica() -> None:
    many = [f"frontend-{i}:9095" for i in range(MAX_FRONTEND_ADDRESSES + 5)]
    local = frontend_stats(0, many)
    assert len(local["frontend_addresses"]) == MAX_FRONTEND_ADDRESSES
    same = peer("b", snapshot(1.0, []), published=WALL, stats=frontend_stats(0, many))
    merged = merge_stats(local, [same], "a")
    assert merged is not None
    assert merged["frontends"] == MAX_FRONTEND_ADDRESSES + 2 * 5


@pytest.mark.parametrize(
    "garbled",
    [
        {"frontends": "many", "frontend_addresses": ["x:1"]},
        {"frontends": -3},
        {"frontends": True},
        {"frontends": 2, "frontend_addresses": "frontend-0:9095"},
        {"frontends": 2, "frontend_addresses": [["frontend-0:9095"]]},
        {"frontends": 1, "frontend_addresses": ["frontend-0:9095", "frontend-9:9095"]},
    ],
)
def test_a_peers_garbled_frontend_figures_do_not_break_or_inflate_the_count(
    garbled: dict[str, Any],
) -> None:
    local = frontend_stats(1, ["frontend-0:9095"])
    merged = merge_stats(local, [peer("b", snapshot(1.0, []), published=WALL, stats=garbled)])
    assert merged is not None
    count = garbled["frontends"]
    valid = isinstance(count, int) and not isinstance(count, bool) and count >= 0
    # A count is kept as anonymous frontends; addresses that are not a list
    # of strings, or more of them than the count, are not trusted.
    assert merged["frontends"] == 2 + (count if valid else 0)


def load(busy: float) -> dict[str, Any]:
    return {
        "window": 10.0,
        "busy": busy,
        "process_cpu": busy,
        "lag_max": 0.001,
        "dispatched": 100.0,
        "cpu_per_query_us": busy * 1e4,
    }


def test_merged_stats_show_the_busiest_replicas_loop_not_a_sum() -> None:
    local = local_stats(RollingStats(clock=lambda: 100.0), frontends=0, load=load(0.3))
    assert local["load"] == load(0.3)
    busy_peer = peer("b", snapshot(1.0, []), published=WALL, stats={"load": load(0.8)})
    quiet_peer = peer("c", snapshot(1.0, []), published=WALL, stats={"load": load(0.1)})
    merged = merge_stats(local, [busy_peer, quiet_peer], "a")
    assert merged is not None
    assert merged["load"] == {**load(0.8), "replica": "b"}
    garbled = peer("d", snapshot(1.0, []), published=WALL, stats={"load": {"busy": "all"}})
    merged = merge_stats(local, [garbled], "a")
    assert merged is not None
    assert merged["load"] == load(0.3)  # the only well-formed one: not named


_EMPTY = {"v": 1, "id": "b", "at": WALL, "total": 0, "leaves": []}


@pytest.mark.parametrize(
    "raw",
    [
        None,
        {"v": 2},
        {"v": 1, "id": "b", "at": WALL, "total": 1, "leaves": [["t", "c"]], "queriers": []},
        {"v": 1, "id": "b", "at": "soon", "total": 0, "leaves": [], "queriers": []},
        {"v": 1, "id": "b", "at": WALL, "total": 0, "leaves": [], "queriers": [[1, 2]]},
        {"v": 1, "id": "b", "at": WALL, "total": float("inf"), "leaves": [], "queriers": []},
        # Ages the merge subtracts from its clock: refused here, not raised in every view.
        {**_EMPTY, "queriers": [["q", True, False, False, "1.5", [], []]]},
        {**_EMPTY, "queriers": [["q", True, False, False, None, [], [[0, None] + [None] * 5]]]},
        {**_EMPTY, "queriers": [["q", True, False, False, None, [], [[0] + ["x"] * 6]]]},
    ],
)
def test_a_malformed_summary_is_refused(raw: Any) -> None:
    with pytest.raises(MalformedSummary):
        PeerSummary.parse(raw)


def test_local_waits_keep_microseconds_so_fast_dispatch_is_not_shown_as_a_rounded_floor() -> None:

    stats = RollingStats(clock=FakeClock(100.0))
    for n in range(10):
        stats.on_dispatched(Request(id=str(n), tenant_id="t", component="ingester"), "q", 0, 3e-5)
    p50, p99, samples = local_stats(stats, frontends=0)["wait_by_component"]["ingester"]
    assert samples == 10
    assert 2e-5 < p50 <= 4e-5 and 2e-5 < p99 <= 4e-5
