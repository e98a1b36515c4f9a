"""Querier lifecycle on a fake clock: workers, shutdown, forget delay, re-queue."""

from __future__ import annotations

import pytest

from scheduler_core.errors import QuerierShuttingDown, UnknownQuerier, WorkerBusy
from scheduler_core.model import INGESTER, Request, TenantLimits
from scheduler_core.queue import RequestQueue
from tests.fakes import clocked_queue


def shard(q: RequestQueue, tenant: str) -> tuple[str, ...] | None:
    return next(t.shard for t in q.snapshot().tenants if t.tenant_id == tenant)


def test_each_connection_gets_the_lowest_free_worker_id() -> None:
    q, _ = clocked_queue()
    assert [q.connect_querier("q1") for _ in range(3)] == [0, 1, 2]
    q.disconnect_querier_worker("q1", 1)
    assert q.connect_querier("q1") == 1
    assert q.connect_querier("q1") == 3
    assert q.connect_querier("q2") == 0


def test_a_shutting_down_querier_gets_an_error_and_others_get_the_work() -> None:
    q, _ = clocked_queue()
    worker = q.connect_querier("q1")
    other = q.connect_querier("q2")
    q.enqueue(Request(id="r1", tenant_id="t"))
    q.notify_querier_shutdown("q1")
    with pytest.raises(QuerierShuttingDown):
        q.dequeue("q1", worker)
    assert len(q) == 1
    got, _ = q.dequeue("q2", other)
    assert got is not None and got.id == "r1"


def test_a_new_connection_of_a_shutting_down_querier_brings_it_back_to_work() -> None:
    q, _ = clocked_queue()
    old = q.connect_querier("q1")
    q.notify_querier_shutdown("q1")
    with pytest.raises(QuerierShuttingDown):
        q.dequeue("q1", old)
    new = q.connect_querier("q1")  # as Cortex's addQuerierConnection resets it
    q.enqueue(Request(id="r1", tenant_id="t"))
    got, _ = q.dequeue("q1", new)
    assert got is not None and got.id == "r1"


def test_shutdown_of_a_querier_without_workers_forgets_it_at_once() -> None:
    q, _ = clocked_queue(querier_forget_delay=60)
    worker = q.connect_querier("q1")
    q.disconnect_querier_worker("q1", worker)
    assert [s.querier_id for s in q.snapshot().queriers] == ["q1"]
    q.notify_querier_shutdown("q1")
    assert q.snapshot().queriers == ()


def test_a_shutting_down_querier_is_forgotten_when_its_last_worker_leaves() -> None:
    q, _ = clocked_queue(querier_forget_delay=60)
    worker = q.connect_querier("q1")
    q.notify_querier_shutdown("q1")
    q.disconnect_querier_worker("q1", worker)
    assert q.snapshot().queriers == ()


def test_forget_delay_reshards_only_after_the_delay() -> None:
    q, clock = clocked_queue(querier_forget_delay=10)
    workers = {name: q.connect_querier(name) for name in ("q1", "q2", "q3")}
    q.set_tenant_limits("t", TenantLimits(max_queriers=1))
    before = shard(q, "t")
    assert before is not None and len(before) == 1
    gone = before[0]
    q.disconnect_querier_worker(gone, workers[gone])
    view = next(s for s in q.snapshot().queriers if s.querier_id == gone)
    assert (view.connected, view.disconnected_at) == (False, 0.0)
    clock.now = 9.9
    assert q.forget_disconnected_queriers() == []
    assert shard(q, "t") == before
    clock.now = 10.0
    assert q.forget_disconnected_queriers() == [gone]
    after = shard(q, "t")
    assert after is not None and gone not in after


def test_reconnecting_within_the_forget_delay_keeps_the_querier() -> None:
    q, clock = clocked_queue(querier_forget_delay=10)
    worker = q.connect_querier("q1")
    q.disconnect_querier_worker("q1", worker)
    clock.now = 5
    q.connect_querier("q1")
    clock.now = 50
    assert q.forget_disconnected_queriers() == []
    assert q.snapshot().queriers[0].connected


def test_without_forget_delay_a_vanished_querier_leaves_the_shards_at_once() -> None:
    q, _ = clocked_queue()
    workers = {name: q.connect_querier(name) for name in ("q1", "q2", "q3")}
    q.set_tenant_limits("t", TenantLimits(max_queriers=2))
    before = shard(q, "t")
    assert before is not None
    q.disconnect_querier_worker(before[0], workers[before[0]])
    assert shard(q, "t") is None  # two queriers left: the tenant may use all


def test_a_failed_send_goes_back_to_the_front_of_its_queue() -> None:
    q, _ = clocked_queue()
    worker = q.connect_querier("q1")
    for rid in ("r1", "r2"):
        q.enqueue(Request(id=rid, tenant_id="t", component=INGESTER))
    first, _ = q.dequeue("q1", worker)
    assert first is not None and first.attempts == 1
    q.requeue_front(first)
    assert not q.in_flight("r1") and len(q) == 2
    again, _ = q.dequeue("q1", worker)
    assert again is first and again.attempts == 2


@pytest.mark.parametrize("back_in", [(2, 0, 1), (2, 1, 0), (1, 2, 0), (0, 1, 2)])
@pytest.mark.parametrize("actor", [(), ("users", "joe")])
def test_requests_put_back_in_any_order_are_served_again_in_their_arrival_order(
    back_in: tuple[int, ...], actor: tuple[str, ...]
) -> None:
    q, clock = clocked_queue()
    workers = [q.connect_querier("q1") for _ in range(3)]
    for n in range(5):
        q.enqueue(Request(id=f"r{n}", tenant_id="t", component=INGESTER, actor_path=actor))
        clock.now += 1.0
    held = [q.dequeue("q1", w)[0] for w in workers]
    assert [r.id for r in held if r is not None] == ["r0", "r1", "r2"]
    # A lost querier's worker streams end in any order; each puts its request back.
    for index in back_in:
        released = q.disconnect_querier_worker("q1", workers[index])
        assert released is not None
        q.requeue_front(released)
    fresh = q.connect_querier("q2")
    served = []
    for _ in range(5):
        got, _ = q.dequeue("q2", fresh)
        assert got is not None
        served.append(got.id)
        q.complete(got.id)
    assert served == ["r0", "r1", "r2", "r3", "r4"]


def test_disconnect_releases_the_in_flight_request_without_requeueing_it() -> None:
    q, _ = clocked_queue()
    worker = q.connect_querier("q1")
    q.enqueue(Request(id="r1", tenant_id="t"))
    got, _ = q.dequeue("q1", worker)
    assert q.disconnect_querier_worker("q1", worker) is got
    assert not q.in_flight("r1") and len(q) == 0
    assert q.snapshot().tenants == ()
    assert got is not None
    q.requeue_front(got)
    assert q.tenant_length("t") == 1


def test_disconnecting_an_unknown_worker_is_ignored() -> None:
    q, _ = clocked_queue()
    assert q.disconnect_querier_worker("nobody", 0) is None


def test_dequeue_rejects_unknown_queriers_and_workers() -> None:
    q, _ = clocked_queue()
    with pytest.raises(UnknownQuerier):
        q.dequeue("nobody", 0)
    q.connect_querier("q1")
    with pytest.raises(UnknownQuerier):
        q.dequeue("q1", 5)


def test_a_busy_worker_cannot_take_a_second_request() -> None:
    q, _ = clocked_queue()
    worker = q.connect_querier("q1")
    q.enqueue(Request(id="r1", tenant_id="t"))
    q.enqueue(Request(id="r2", tenant_id="t"))
    q.dequeue("q1", worker)
    with pytest.raises(WorkerBusy):
        q.dequeue("q1", worker)
    q.complete("r1")
    got, _ = q.dequeue("q1", worker)
    assert got is not None and got.id == "r2"


def test_snapshot_shows_busy_and_idle_workers_with_their_times() -> None:
    q, clock = clocked_queue()
    w0 = q.connect_querier("q1")
    q.connect_querier("q1")
    q.enqueue(Request(id="r1", tenant_id="t", component=INGESTER, priority=2))
    clock.now = 3.0
    q.dequeue("q1", w0)
    busy, idle = q.snapshot().queriers[0].workers
    assert busy[:7] == ("q1", 0, "r1", "t", INGESTER, 2, 3.0)
    assert idle[:7] == ("q1", 1, None, None, None, None, 0.0)
    assert not busy.waiting and not idle.waiting
