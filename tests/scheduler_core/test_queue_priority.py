"""Cortex query priority and reserved queriers, plus our fixes over Cortex."""

from __future__ import annotations

from scheduler_core.model import (
    INGESTER,
    PriorityDef,
    QueryPriority,
    Request,
    TenantLimits,
)
from scheduler_core.queue import RequestQueue
from scheduler_core.snapshot import Reservation
from tests.fakes import clocked_queue


def priority(*defs: tuple[int, float], enabled: bool = True) -> QueryPriority:
    return QueryPriority(enabled=enabled, priorities=[PriorityDef(p, r) for p, r in defs])


def reservations(q: RequestQueue, tenant: str) -> list[tuple[str, int]]:
    view = next(t for t in q.snapshot().tenants if t.tenant_id == tenant)
    return [(r.querier_id, r.priority) for r in view.reservations]


def connect_all(q: RequestQueue, names: list[str]) -> dict[str, int]:
    return {name: q.connect_querier(name) for name in names}


def test_highest_priority_is_dequeued_first_and_fifo_within_a_priority() -> None:
    q, _ = clocked_queue()
    q.set_tenant_limits("t", TenantLimits(query_priority=priority((2, 0))))
    for rid, prio in (("p0", 0), ("p2a", 2), ("p1", 1), ("p2b", 2)):
        q.enqueue(Request(id=rid, tenant_id="t", component=INGESTER, priority=prio))
    worker = q.connect_querier("q1")
    order = []
    while (got := q.dequeue("q1", worker)[0]) is not None:
        order.append(got.id)
        q.complete(got.id)
    assert order == ["p2a", "p2b", "p1", "p0"]


def test_reserved_lists_follow_cortex_for_counts_and_shares() -> None:
    cases = [
        (((1, 2), (2, 3)), [1, 1, 2, 2, 2]),
        (((1, 0.3), (2, 0.6)), [1, 1, 1, 2, 2, 2, 2, 2, 2]),
        (((1, 0.4), (2, 0.6)), []),
    ]
    names = [f"q{i:02d}" for i in range(10)]
    for defs, expected in cases:
        q, _ = clocked_queue()
        connect_all(q, names)
        q.set_tenant_limits("t", TenantLimits(query_priority=priority(*defs)))
        assert reservations(q, "t") == list(zip(names, expected, strict=False))


def test_a_reserved_querier_takes_only_its_priorities_and_then_returns_none() -> None:
    q, _ = clocked_queue()
    workers = connect_all(q, ["qa", "qb"])
    q.set_tenant_limits("t", TenantLimits(query_priority=priority((2, 1))))
    assert reservations(q, "t") == [("qa", 2)]
    for rid, prio in (("low1", 0), ("high", 2), ("low2", 1)):
        q.enqueue(Request(id=rid, tenant_id="t", priority=prio))
    got, _ = q.dequeue("qa", workers["qa"])
    assert got is not None and got.id == "high"
    q.complete("high")
    assert q.dequeue("qa", workers["qa"]) == (None, -1)
    assert len(q) == 2
    got, _ = q.dequeue("qb", workers["qb"])
    assert got is not None and got.id == "low2"


def test_a_reserved_querier_takes_higher_priorities_than_its_own() -> None:
    q, _ = clocked_queue()
    workers = connect_all(q, ["qa", "qb", "qc"])
    q.set_tenant_limits("t", TenantLimits(query_priority=priority((1, 1), (3, 1))))
    assert reservations(q, "t") == [("qa", 1), ("qb", 3)]
    q.enqueue(Request(id="p3", tenant_id="t", priority=3))
    got, _ = q.dequeue("qa", workers["qa"])
    assert got is not None and got.id == "p3"


def test_a_reserved_querier_moves_on_to_the_next_tenant_instead_of_stalling() -> None:
    q, _ = clocked_queue()
    workers = connect_all(q, ["qa", "qb"])
    q.set_tenant_limits("t", TenantLimits(query_priority=priority((2, 1))))
    q.enqueue(Request(id="t-low", tenant_id="t", priority=0))
    q.enqueue(Request(id="u-low", tenant_id="u", priority=0))
    got, last = q.dequeue("qa", workers["qa"])
    assert got is not None and (got.id, last) == ("u-low", 1)


def test_a_reserved_querier_moves_on_in_component_first_layout_too() -> None:
    q, _ = clocked_queue(layout="component-first", component_selection="querier-worker-priority")
    workers = connect_all(q, ["qa", "qb"])
    q.set_tenant_limits("t", TenantLimits(query_priority=priority((2, 1))))
    q.enqueue(Request(id="t-low", tenant_id="t", component=INGESTER, priority=0))
    q.enqueue(Request(id="u-low", tenant_id="u", component="store-gateway", priority=0))
    got, _ = q.dequeue("qa", workers["qa"])
    assert got is not None and got.id == "u-low"


def test_reservations_need_priority_enabled() -> None:
    q, _ = clocked_queue()
    connect_all(q, ["qa", "qb", "qc"])
    q.set_tenant_limits("t", TenantLimits(query_priority=priority((2, 1), enabled=False)))
    assert reservations(q, "t") == []


def test_reservations_follow_queriers_as_they_come_and_go() -> None:
    q, _ = clocked_queue()
    workers = connect_all(q, ["qb", "qc"])
    q.set_tenant_limits("t", TenantLimits(query_priority=priority((2, 1))))
    assert reservations(q, "t") == [("qb", 2)]
    connect_all(q, ["qa"])
    assert reservations(q, "t") == [("qa", 2)]
    q.disconnect_querier_worker("qb", workers["qb"])
    assert reservations(q, "t") == [("qa", 2)]
    q.disconnect_querier_worker("qc", workers["qc"])
    assert reservations(q, "t") == []  # one querier left: it must serve everything


def test_reservations_are_taken_from_the_shuffle_shard_in_sorted_order() -> None:
    q, _ = clocked_queue()
    connect_all(q, [f"q{i}" for i in range(6)])
    q.set_tenant_limits("t", TenantLimits(max_queriers=3, query_priority=priority((1, 1), (2, 1))))
    view = next(t for t in q.snapshot().tenants if t.tenant_id == "t")
    assert view.shard is not None and len(view.shard) == 3
    assert view.reservations == (
        Reservation("t", 1, view.shard[0]),
        Reservation("t", 2, view.shard[1]),
    )
    by_querier = {s.querier_id: s.reservations for s in q.snapshot().queriers}
    assert by_querier[view.shard[0]] == (Reservation("t", 1, view.shard[0]),)
    assert by_querier[view.shard[2]] == ()


def test_serving_answers_a_tenants_shard_and_reservations_as_the_snapshot_does() -> None:
    q, _ = clocked_queue()
    connect_all(q, [f"q{i}" for i in range(7)])
    # The demo's team-b: a shard of 3, half of it (rounded up) for priority 3.
    q.set_tenant_limits("b", TenantLimits(max_queriers=3, query_priority=priority((3, 0.5))))
    q.set_tenant_limits("open", TenantLimits())
    views = {t.tenant_id: t for t in q.snapshot().tenants}
    served = q.serving("b")
    assert served.shard == views["b"].shard and served.shard is not None
    assert len(served.shard) == 3 and served.queriers == 7
    assert served.reservations == views["b"].reservations
    assert [r.priority for r in served.reservations] == [3, 3]
    assert q.serving("open") == ("open", None, 7, ())
    assert q.serving("never-seen") == ("never-seen", None, 7, ())


def test_idle_workers_counts_the_named_queriers_workers_without_a_request() -> None:
    q, _ = clocked_queue()
    first = q.connect_querier("qa")
    q.connect_querier("qa")
    q.connect_querier("qb")
    q.enqueue(Request(id="r", tenant_id="t"))
    got, _ = q.dequeue("qa", first)
    assert got is not None and got.id == "r"
    assert q.idle_workers(["qa", "qb", "gone"]) == (2, 3)
    assert q.idle_workers(["qa"]) == (1, 2)
    assert q.idle_workers([]) == (0, 0)


def test_a_reserved_querier_is_an_ordinary_one_for_other_tenants() -> None:
    q, _ = clocked_queue()
    workers = connect_all(q, ["qa", "qb"])
    q.set_tenant_limits("t", TenantLimits(query_priority=priority((2, 1))))
    q.enqueue(Request(id="u-low", tenant_id="u", priority=0))
    got, _ = q.dequeue("qa", workers["qa"])
    assert got is not None and got.id == "u-low"


def test_reserved_and_idle_queriers_are_flagged_in_the_snapshot() -> None:
    q, _ = clocked_queue()
    workers = connect_all(q, ["qa", "qb"])
    q.set_tenant_limits("t", TenantLimits(query_priority=priority((2, 1))))
    flags = {s.querier_id: s.reserved_idle for s in q.snapshot().queriers}
    assert flags == {"qa": True, "qb": False}
    q.enqueue(Request(id="high", tenant_id="t", priority=2))
    q.dequeue("qa", workers["qa"])
    assert not q.snapshot().queriers[0].reserved_idle


def test_turning_priority_on_keeps_every_queued_request() -> None:
    q, _ = clocked_queue()
    for i, prio in enumerate([0, 3, 1, 3, 0]):
        q.enqueue(Request(id=f"r{i}", tenant_id="t", component=INGESTER, priority=prio))
    q.set_tenant_limits("t", TenantLimits(query_priority=priority((3, 1))))
    assert len(q) == 5 and q.tenant_length("t") == 5
    worker = q.connect_querier("q1")
    order = []
    while (got := q.dequeue("q1", worker)[0]) is not None:
        order.append(got.id)
        q.complete(got.id)
    assert order == ["r1", "r3", "r2", "r0", "r4"]
