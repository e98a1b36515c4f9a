"""Outstanding limits, cancel, duplicates, aging, drain and snapshot contents."""

from __future__ import annotations

from dataclasses import replace

import pytest

from scheduler_core.errors import DuplicateRequest, TooManyRequests
from scheduler_core.model import (
    INGESTER,
    STORE_GATEWAY,
    QueryPriority,
    QueueConfig,
    Request,
    TenantLimits,
)
from scheduler_core.queue import RequestQueue
from scheduler_core.snapshot import LeafSnapshot
from tests.fakes import clocked_queue


def fill(q: RequestQueue, tenant: str, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        q.enqueue(Request(id=f"{tenant}{i}", tenant_id=tenant))


def test_the_default_limit_counts_queued_and_in_flight_requests() -> None:
    q, _ = clocked_queue()
    fill(q, "t", 100)
    with pytest.raises(TooManyRequests) as info:
        fill(q, "t", 1, start=100)
    assert info.value.tenant_id == "t" and str(info.value) == "too many outstanding requests"
    worker = q.connect_querier("q1")
    q.dequeue("q1", worker)
    with pytest.raises(TooManyRequests):
        fill(q, "t", 1, start=100)
    q.complete("t0")
    fill(q, "t", 1, start=100)
    fill(q, "other", 1)


def test_a_tenants_own_outstanding_limit_wins_over_the_queue_default_even_when_zero() -> None:
    config = QueueConfig(max_outstanding_requests_per_tenant=7)
    assert config.outstanding_limit(None) == 7
    assert config.outstanding_limit(TenantLimits()) == 7
    assert config.outstanding_limit(TenantLimits(max_outstanding=0)) == 0
    assert config.outstanding_limit(TenantLimits(max_outstanding=50)) == 50


def test_lowering_a_tenant_limit_keeps_queued_work_and_rejects_new() -> None:
    q, _ = clocked_queue(max_outstanding_requests_per_tenant=10)
    fill(q, "t", 5)
    q.set_tenant_limits("t", TenantLimits(max_outstanding=2))
    assert q.tenant_length("t") == 5
    assert q.snapshot().tenants[0].max_outstanding == 2
    with pytest.raises(TooManyRequests):
        fill(q, "t", 1, start=5)
    q.remove_tenant_limits("t")
    fill(q, "t", 1, start=5)
    assert q.tenant_length("t") == 6


def test_cancel_removes_a_queued_request_at_once() -> None:
    q, _ = clocked_queue()
    fill(q, "t", 3)
    cancelled = q.cancel("t1")
    assert cancelled is not None and cancelled.id == "t1"
    assert len(q) == 2 and q.tenant_length("t") == 2
    assert q.snapshot().leaves[0].length == 2
    worker = q.connect_querier("q1")
    ids = []
    while (got := q.dequeue("q1", worker)[0]) is not None:
        ids.append(got.id)
        q.complete(got.id)
    assert ids == ["t0", "t2"]


def test_cancel_of_the_only_request_prunes_the_tenant() -> None:
    q, _ = clocked_queue()
    fill(q, "t", 1)
    q.cancel("t0")
    snap = q.snapshot()
    assert (snap.total, snap.leaves, snap.tenants) == (0, (), ())


def test_cancel_of_an_in_flight_request_frees_its_worker() -> None:
    q, _ = clocked_queue()
    fill(q, "t", 1)
    worker = q.connect_querier("q1")
    q.dequeue("q1", worker)
    assert q.cancel("t0") is not None
    assert not q.in_flight("t0")
    assert q.snapshot().queriers[0].workers[0].request_id is None
    assert q.cancel("t0") is None
    assert q.complete("t0") is None


def test_a_request_id_can_be_queued_only_once() -> None:
    q, _ = clocked_queue()
    fill(q, "t", 1)
    with pytest.raises(DuplicateRequest):
        fill(q, "t", 1)
    worker = q.connect_querier("q1")
    got, _ = q.dequeue("q1", worker)
    with pytest.raises(DuplicateRequest):
        fill(q, "t", 1)
    assert got is not None
    q.requeue_front(got)
    with pytest.raises(DuplicateRequest):
        q.requeue_front(got)


def test_an_unknown_component_is_refused() -> None:
    q, _ = clocked_queue()
    with pytest.raises(ValueError):
        q.enqueue(Request(id="r", tenant_id="t", component="compactor"))


def test_enqueue_stamps_the_clock() -> None:
    q, clock = clocked_queue()
    clock.now = 42.0
    request = Request(id="r", tenant_id="t")
    q.enqueue(request)
    assert request.enqueued_at == 42.0


def order_with_aging(aging: float, high_at: float) -> list[str]:
    q, clock = clocked_queue(priority_aging_seconds=aging)
    q.enqueue(Request(id="low", tenant_id="t", priority=0))
    clock.now = high_at
    q.enqueue(Request(id="high", tenant_id="t", priority=1))
    worker = q.connect_querier("q1")
    ids = []
    while (got := q.dequeue("q1", worker)[0]) is not None:
        ids.append(got.id)
        q.complete(got.id)
    return ids


def test_without_aging_priority_is_strict() -> None:
    assert order_with_aging(0.0, high_at=1000.0) == ["high", "low"]


def test_with_aging_a_long_wait_outranks_one_priority_level() -> None:
    assert order_with_aging(10.0, high_at=15.0) == ["low", "high"]
    assert order_with_aging(10.0, high_at=5.0) == ["high", "low"]


def test_turning_aging_on_at_run_time_applies_to_queued_requests() -> None:
    q, clock = clocked_queue()
    q.enqueue(Request(id="low", tenant_id="t", priority=0))
    clock.now = 15.0
    q.enqueue(Request(id="high", tenant_id="t", priority=1))
    q.set_config(replace(q.config, priority_aging_seconds=10.0))
    worker = q.connect_querier("q1")
    got, _ = q.dequeue("q1", worker)
    assert got is not None and got.id == "low"


def test_drain_removes_every_queued_request_and_keeps_in_flight_ones() -> None:
    q, _ = clocked_queue()
    fill(q, "a", 2)
    fill(q, "b", 2)
    worker = q.connect_querier("q1")
    q.dequeue("q1", worker)
    drained = q.drain()
    assert sorted(r.id for r in drained) == ["a1", "b0", "b1"]
    assert len(q) == 0 and q.in_flight("a0")
    fill(q, "c", 1)
    q.complete("a0")
    got, _ = q.dequeue("q1", worker)
    assert got is not None and got.id == "c0"


def test_snapshot_counts_leaves_by_priority_with_the_oldest_time() -> None:
    q, clock = clocked_queue()
    q.set_tenant_limits("t", TenantLimits(max_queriers=0, query_priority=QueryPriority(True)))
    for i, (component, prio) in enumerate(
        [(INGESTER, 1), (INGESTER, 3), (INGESTER, 1), (STORE_GATEWAY, 0)]
    ):
        clock.now = float(i)
        q.enqueue(Request(id=f"r{i}", tenant_id="t", component=component, priority=prio))
    q.cancel("r2")
    snap = q.snapshot()
    assert (snap.total, snap.layout, snap.component_selection) == (3, "tenant-first", "round-robin")
    assert snap.leaves == (
        LeafSnapshot("t", INGESTER, 2, ((3, 1), (1, 1)), 0.0),
        LeafSnapshot("t", STORE_GATEWAY, 1, ((0, 1),), 3.0),
    )
    tenant = snap.tenants[0]
    assert tenant == ("t", 3, 100, None, (), True)
