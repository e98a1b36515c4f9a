"""SchedulerRuntime: blocking dispatch, faults and shutdown on a real loop."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler_core.errors import (
    DuplicateRequest,
    QuerierShuttingDown,
    SchedulerStopping,
    TooManyRequests,
    UnknownQuerier,
)
from scheduler_core.model import QuerierNoResult, QueueConfig, Request, TenantLimits
from scheduler_core.runtime import SchedulerRuntime
from tests.fakes import FakeClock


class Recorder:
    """Observer that keeps every event, to check nothing is lost."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []
        self.waits: list[tuple[str, float]] = []

    def on_enqueued(self, req: Request) -> None:
        self.events.append(("enqueued", req.id, None))

    def on_rejected(self, req: Request, reason: str) -> None:
        self.events.append(("rejected", req.id, reason))

    def on_dispatched(self, req: Request, querier_id: str, worker_id: int, wait: float) -> None:
        self.events.append(("dispatched", req.id, (querier_id, worker_id)))
        self.waits.append((req.id, wait))

    def on_completed(self, req: Request) -> None:
        self.events.append(("completed", req.id, None))

    def on_cancelled(self, req: Request) -> None:
        self.events.append(("cancelled", req.id, None))

    def on_failed(self, req: Request, reason: str) -> None:
        self.events.append(("failed", req.id, reason))

    def kinds(self, request_id: str) -> list[str]:
        return [kind for kind, rid, _ in self.events if rid == request_id]


@pytest.fixture
async def runtime() -> Any:
    rt = SchedulerRuntime(QueueConfig(), observer=Recorder(), forget_check_interval=0.01)
    await rt.start()
    yield rt
    await rt.stop(drain_timeout=0)


async def test_a_waiting_worker_receives_a_request_enqueued_later(
    runtime: SchedulerRuntime,
) -> None:
    worker = runtime.connect_querier("q-1")
    waiting = asyncio.create_task(runtime.next_request("q-1", worker))
    await asyncio.sleep(0)
    assert not waiting.done()
    runtime.enqueue(Request(id="r1", tenant_id="t1"))
    request = await asyncio.wait_for(waiting, 1)
    assert request.id == "r1"
    assert runtime.complete("r1") is request
    assert runtime.observer.kinds("r1") == ["enqueued", "dispatched", "completed"]


async def test_waiting_workers_are_served_in_the_order_they_started_waiting(
    runtime: SchedulerRuntime,
) -> None:
    workers = [runtime.connect_querier(f"q-{i}") for i in range(3)]
    tasks = [asyncio.create_task(runtime.next_request(f"q-{i}", w)) for i, w in enumerate(workers)]
    await asyncio.sleep(0)
    for i in range(3):
        runtime.enqueue(Request(id=f"r{i}", tenant_id="t1"))
    results = await asyncio.wait_for(asyncio.gather(*tasks), 1)
    assert [r.id for r in results] == ["r0", "r1", "r2"]


async def test_a_cancelled_wait_never_loses_the_request_it_was_handed(
    runtime: SchedulerRuntime,
) -> None:
    worker = runtime.connect_querier("q-1")
    waiting = asyncio.create_task(runtime.next_request("q-1", worker))
    await asyncio.sleep(0)
    # The enqueue hands r1 to the waiting worker at once; cancel before it resumes.
    runtime.enqueue(Request(id="r1", tenant_id="t1"))
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert len(runtime.queue) == 1
    again = await asyncio.wait_for(runtime.next_request("q-1", worker), 1)
    assert again.id == "r1"
    assert again.attempts == 1


async def test_a_request_whose_querier_vanished_is_retried_once_then_failed(
    runtime: SchedulerRuntime,
) -> None:
    runtime.enqueue(Request(id="r1", tenant_id="t1"))
    first = runtime.connect_querier("q-1")
    assert (await runtime.next_request("q-1", first)).id == "r1"
    runtime.disconnect_querier_worker("q-1", first)
    assert len(runtime.queue) == 1
    second = runtime.connect_querier("q-2")
    assert (await runtime.next_request("q-2", second)).id == "r1"
    runtime.disconnect_querier_worker("q-2", second)
    assert len(runtime.queue) == 0
    kinds = runtime.observer.kinds("r1")
    assert kinds == ["enqueued", "dispatched", "dispatched", "failed"]
    reason = runtime.observer.events[-1][2]
    assert "q-2 disconnected" in reason


async def test_a_request_finished_without_a_result_fails_once_and_frees_its_worker(
    runtime: SchedulerRuntime,
) -> None:
    runtime.enqueue(Request(id="r1", tenant_id="t1"))
    runtime.enqueue(Request(id="r2", tenant_id="t1"))
    worker = runtime.connect_querier("q-1")
    await runtime.next_request("q-1", worker)

    assert runtime.fail_unanswered("r1", "q-1") is not None
    assert runtime.fail_unanswered("r1", "q-1") is None  # ended already
    assert runtime.complete("r1") is None

    assert runtime.observer.kinds("r1") == ["enqueued", "dispatched", "failed"]
    assert isinstance(runtime.observer.events[-1][2], QuerierNoResult)
    assert (await asyncio.wait_for(runtime.next_request("q-1", worker), 1)).id == "r2"


async def test_a_querier_that_announced_shutdown_stops_waiting_with_an_error(
    runtime: SchedulerRuntime,
) -> None:
    worker = runtime.connect_querier("q-1")
    waiting = asyncio.create_task(runtime.next_request("q-1", worker))
    await asyncio.sleep(0)
    runtime.notify_querier_shutdown("q-1")
    with pytest.raises(QuerierShuttingDown):
        await asyncio.wait_for(waiting, 1)


async def test_cancelling_an_in_flight_request_resolves_its_cancellation_future(
    runtime: SchedulerRuntime,
) -> None:
    runtime.enqueue(Request(id="r1", tenant_id="t1"))
    worker = runtime.connect_querier("q-1")
    await runtime.next_request("q-1", worker)
    cancelled = runtime.cancellation("r1")
    assert runtime.cancel("r1") is not None
    await asyncio.wait_for(cancelled, 1)
    assert runtime.observer.kinds("r1") == ["enqueued", "dispatched", "cancelled"]


async def test_enqueue_over_the_tenant_limit_is_rejected_and_reported(
    runtime: SchedulerRuntime,
) -> None:
    runtime.set_tenant_limits("t1", TenantLimits(max_outstanding=1))
    runtime.enqueue(Request(id="r1", tenant_id="t1"))
    with pytest.raises(TooManyRequests):
        runtime.enqueue(Request(id="r2", tenant_id="t1"))
    assert runtime.observer.kinds("r2") == ["rejected"]


async def test_a_duplicate_id_is_the_callers_error_and_no_rejection_to_observers(
    runtime: SchedulerRuntime,
) -> None:
    # Told as a rejection, it was counted a 429 and ended the tracking that
    # observers keep by ID for the original request.
    runtime.enqueue(Request(id="r1", tenant_id="t1"))
    with pytest.raises(DuplicateRequest):
        runtime.enqueue(Request(id="r1", tenant_id="t1"))
    assert runtime.observer.kinds("r1") == ["enqueued"]


async def test_stop_refuses_new_work_and_fails_what_is_still_queued() -> None:
    rt = SchedulerRuntime(QueueConfig(), observer=Recorder())
    await rt.start()
    rt.enqueue(Request(id="r1", tenant_id="t1"))
    leftovers = await rt.stop(drain_timeout=0.01)
    assert [r.id for r in leftovers] == ["r1"]
    assert rt.observer.kinds("r1") == ["enqueued", "failed"]
    with pytest.raises(SchedulerStopping):
        rt.enqueue(Request(id="r2", tenant_id="t1"))


async def test_stop_returns_once_queriers_drained_the_queue() -> None:
    rt = SchedulerRuntime(QueueConfig(), observer=Recorder())
    await rt.start()
    rt.enqueue(Request(id="r1", tenant_id="t1"))
    worker = rt.connect_querier("q-1")

    async def serve() -> None:
        request = await rt.next_request("q-1", worker)
        rt.complete(request.id)

    server = asyncio.create_task(serve())
    assert await asyncio.wait_for(rt.stop(drain_timeout=5), 2) == []
    await server
    assert rt.observer.kinds("r1") == ["enqueued", "dispatched", "completed"]


async def test_stop_waits_for_running_requests_to_finish_within_the_deadline() -> None:
    rt = SchedulerRuntime(QueueConfig(), observer=Recorder())
    await rt.start()
    worker = rt.connect_querier("q-1")
    rt.enqueue(Request(id="r1", tenant_id="t1"))
    running = await rt.next_request("q-1", worker)
    stopping = asyncio.create_task(rt.stop(drain_timeout=30))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not stopping.done()  # the queue is empty, but r1 still runs
    rt.complete(running.id)
    assert await asyncio.wait_for(stopping, 5) == []
    assert rt.observer.kinds("r1") == ["enqueued", "dispatched", "completed"]


async def test_at_the_deadline_running_requests_are_failed_back_as_well_as_queued_ones() -> None:
    rt = SchedulerRuntime(QueueConfig(), observer=Recorder())
    await rt.start()
    worker = rt.connect_querier("q-1")
    rt.enqueue(Request(id="running", tenant_id="t1"))
    assert (await rt.next_request("q-1", worker)).id == "running"
    aborted = rt.cancellation("running")  # how a querier transport learns to abort
    rt.enqueue(Request(id="queued", tenant_id="t1"))
    leftovers = await rt.stop(drain_timeout=0)
    assert [r.id for r in leftovers] == ["queued", "running"]
    for rid in ("queued", "running"):
        assert rt.observer.events[-1 if rid == "running" else -2] == (
            "failed",
            rid,
            "scheduler shutting down",
        )
    assert aborted.done()
    # The querier answers late: the request is gone, nothing is reported twice.
    assert rt.complete("running") is None
    assert rt.disconnect_querier_worker("q-1", worker) is None
    assert rt.observer.kinds("running") == ["enqueued", "dispatched", "failed"]
    assert rt.queue.in_flight_count() == 0 and len(rt.queue) == 0
    assert rt.snapshot().tenants == ()


async def test_snapshot_marks_workers_blocked_in_next_request_as_waiting(
    runtime: SchedulerRuntime,
) -> None:
    worker = runtime.connect_querier("q-1")
    waiting = asyncio.create_task(runtime.next_request("q-1", worker))
    await asyncio.sleep(0)
    (querier,) = runtime.snapshot().queriers
    assert [w.waiting for w in querier.workers] == [True]
    waiting.cancel()


async def clocked_runtime() -> tuple[SchedulerRuntime, Recorder, FakeClock]:
    """A started runtime on a fake clock at 100, whose observer is a Recorder."""
    clock, recorder = FakeClock(100.0), Recorder()
    rt = SchedulerRuntime(QueueConfig(), clock=clock, observer=recorder)
    await rt.start()
    return rt, recorder, clock


async def waiting_worker(rt: SchedulerRuntime) -> tuple[int, asyncio.Task[Request]]:
    """Worker q-1/N, blocked in next_request on an empty queue."""
    worker = rt.connect_querier("q-1")
    waiting = asyncio.create_task(rt.next_request("q-1", worker))
    await asyncio.sleep(0)
    return worker, waiting


async def test_a_wait_cancelled_in_the_turn_its_request_was_handed_over_reports_no_dispatch() -> (
    None
):
    rt, recorder, clock = await clocked_runtime()
    worker, waiting = await waiting_worker(rt)
    rt.enqueue(Request(id="r1", tenant_id="t1"))  # handed to the waiting worker
    waiting.cancel()  # before it resumed: the querier never got r1
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert recorder.kinds("r1") == ["enqueued"]
    clock.now = 104.0
    again = await rt.next_request("q-1", worker)
    assert again.id == "r1"
    assert recorder.kinds("r1") == ["enqueued", "dispatched"]
    assert recorder.waits == [("r1", 4.0)]
    await rt.stop(drain_timeout=0)


async def test_a_request_cancelled_before_its_worker_resumed_is_not_returned_to_it() -> None:
    rt, recorder, _ = await clocked_runtime()
    worker, waiting = await waiting_worker(rt)
    rt.enqueue(Request(id="r1", tenant_id="t1"))  # handed to the waiting worker
    assert rt.cancel("r1") is not None  # its frontend gave up before the worker resumed
    for _ in range(3):
        await asyncio.sleep(0)
    assert not waiting.done()  # the worker went on waiting
    rt.enqueue(Request(id="r2", tenant_id="t1"))
    assert (await asyncio.wait_for(waiting, 1)).id == "r2"
    assert recorder.kinds("r1") == ["enqueued", "cancelled"]
    assert recorder.kinds("r2") == ["enqueued", "dispatched"]
    await rt.stop(drain_timeout=0)


async def test_the_reported_wait_ends_at_the_hand_off_not_when_the_worker_resumes() -> None:
    rt, recorder, clock = await clocked_runtime()
    worker, waiting = await waiting_worker(rt)
    rt.enqueue(Request(id="r1", tenant_id="t1"))  # handed over at 100
    clock.now = 105.0  # the worker resumes later
    assert (await waiting).id == "r1"
    assert recorder.waits == [("r1", 0.0)]
    await rt.stop(drain_timeout=0)


async def test_a_wait_outliving_its_dropped_worker_gets_nothing_though_the_id_was_reused() -> None:
    rt, recorder, _ = await clocked_runtime()
    worker, stale = await waiting_worker(rt)
    rt.enqueue(Request(id="r1", tenant_id="t1"))  # handed to the waiting worker
    rt.disconnect_querier_worker("q-1", worker)  # r1 goes back to the queue
    assert rt.connect_querier("q-1") == worker  # a new stream, the same worker id
    assert (await rt.next_request("q-1", worker)).id == "r1"
    with pytest.raises(UnknownQuerier):
        await stale
    assert rt.queue.in_flight_on("r1", "q-1", worker)
    assert recorder.kinds("r1") == ["enqueued", "dispatched"]
    await rt.stop(drain_timeout=0)


async def test_hand_offs_undone_by_disconnects_spend_none_of_the_requests_attempts() -> None:
    rt, recorder, _ = await clocked_runtime()
    first, first_wait = await waiting_worker(rt)
    second, second_wait = await waiting_worker(rt)
    rt.enqueue(Request(id="r1", tenant_id="t1"))  # handed to the first worker
    rt.disconnect_querier_worker("q-1", first)  # before it resumed: r1 goes back
    rt.enqueue(Request(id="r2", tenant_id="t1"))  # a dispatch pass, same turn
    assert rt.queue.in_flight_on("r1", "q-1", second)  # r1, at the front, handed on
    rt.disconnect_querier_worker("q-1", second)  # again before it resumed
    third = rt.connect_querier("q-1")
    received = await asyncio.wait_for(rt.next_request("q-1", third), 1)
    assert (received.id, received.attempts) == ("r1", 1)  # its first real run
    assert recorder.kinds("r1") == ["enqueued", "dispatched"]
    for stale in (first_wait, second_wait):
        with pytest.raises(UnknownQuerier):
            await asyncio.wait_for(stale, 1)
    await rt.stop(drain_timeout=0)


async def test_a_worker_a_tenant_s_new_limits_admit_takes_its_federated_id_s_work_at_once(
    runtime: SchedulerRuntime,
) -> None:
    # `a|b`'s queue takes its tenants' limits anew as one of them changes,
    # not at its next request: a worker the new shard admits must not wait
    # for a request of `a|b` to come.
    workers = {q: runtime.connect_querier(q) for q in ("q0", "q1")}
    runtime.set_tenant_limits("a", TenantLimits(max_queriers=1))
    runtime.enqueue(Request(id="r0", tenant_id="a|b"))
    shard = runtime.queue.serving("a|b").shard
    assert shard is not None and len(shard) == 1
    (other,) = {"q0", "q1"} - set(shard)
    waiting = asyncio.create_task(runtime.next_request(other, workers[other]))
    await asyncio.sleep(0)
    assert not waiting.done()
    runtime.set_tenant_limits("a", TenantLimits(max_queriers=0))
    received = await asyncio.wait_for(waiting, 1)
    assert received.id == "r0"
