"""Querier streams end as Cortex's scheduler ends them when the door closes.

At the end of a shutdown drain, Cortex v1.15.3's scheduler returns its
queue's `ErrStopped` to every querier worker waiting for work: status
UNKNOWN "queue is stopped", and its querier logs that and dials again. The
door left those streams waiting until the server's grace ran out and reset
them (RST_STREAM CANCEL), which the querier logged as a broken stream
("stream terminated by RST_STREAM with error code: CANCEL"). No request may
be lost or ended twice on the way: a worker still running one finishes it.
"""

from __future__ import annotations

import asyncio
import time

import grpc
import pytest

from api.wire.grpc.clients import CortexFrontend, QuerierWorker, get_request
from api.wire.grpc.http2_frames import CANCEL, NO_ERROR
from api.wire.grpc.querier_loop import QUEUE_STOPPED
from scheduler_core.model import QueueConfig
from scheduler_core.pb import schedulerpb_pb2 as pb
from tests.api.wire.grpc.conftest import Scheduler, running_scheduler, waiting_workers
from tests.api.wire.grpc.raw_http2 import RawPeer, grpc_message, request_headers, until

QUERIER_LOOP = "/schedulerpb.SchedulerForQuerier/QuerierLoop"
QUERY = get_request("/api/v1/query", [("query", "up")])
# Far longer than the door takes to end a stream itself: a stop that lasts
# this long waited for the grace and then reset what was left.
GRACE = 10.0


async def ended_status(worker: QuerierWorker) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.aio.AioRpcError) as ended:
        await worker.next(timeout=GRACE)
    return ended.value.code(), ended.value.details() or ""


async def answered_once_then_stopped(
    sched: Scheduler, frontend: CortexFrontend, worker: QuerierWorker
) -> None:
    """Query 1 was answered and completed exactly once, then `worker`'s stream was stopped."""
    assert await ended_status(worker) == (grpc.StatusCode.UNKNOWN, QUEUE_STOPPED)
    assert (await frontend.result(1)).code == 200
    assert [r.payload.query_id for r in sched.recorder.of("completed")] == [1]
    assert sched.recorder.of("failed") == sched.recorder.of("cancelled") == []
    await worker.close()
    await frontend.close()


async def test_an_idle_querier_stream_ends_with_queue_is_stopped_when_the_drain_ends(
    sched: Scheduler,
) -> None:
    workers = [await QuerierWorker(sched.channel(), "cortex-q").open() for _ in range(3)]
    await until(lambda: waiting_workers(sched) == 3)

    assert await sched.runtime.stop(drain_timeout=1.0) == []
    started = time.monotonic()
    await sched.door.stop(grace=GRACE)

    assert time.monotonic() - started < GRACE / 2
    assert [await ended_status(w) for w in workers] == [
        (grpc.StatusCode.UNKNOWN, QUEUE_STOPPED)
    ] * 3
    assert sched.runtime.snapshot().queriers == ()


async def test_work_queued_when_the_drain_starts_is_answered_before_its_worker_is_stopped(
    sched: Scheduler,
) -> None:
    frontend = await CortexFrontend(sched.address).start()
    loop = await frontend.open_loop()
    assert await loop.enqueue(1, "t", QUERY) == pb.OK
    draining = asyncio.ensure_future(sched.runtime.stop(drain_timeout=GRACE))
    worker = await QuerierWorker(sched.channel(), "cortex-q").open()

    await worker.answer(await worker.next())
    assert await asyncio.wait_for(draining, GRACE) == []
    await loop.close()
    await sched.door.stop(grace=GRACE)

    await answered_once_then_stopped(sched, frontend, worker)


async def test_a_worker_running_a_request_when_the_door_closes_finishes_it_then_is_stopped(
    sched: Scheduler,
) -> None:
    frontend = await CortexFrontend(sched.address).start()
    loop = await frontend.open_loop()
    worker = await QuerierWorker(sched.channel(), "cortex-q").open()
    assert await loop.enqueue(1, "t", QUERY) == pb.OK
    running = await worker.next()

    sched.door.querier_loops.close()  # what the door's stop does first
    await worker.answer(running)

    await answered_once_then_stopped(sched, frontend, worker)


async def test_a_querier_stream_opened_after_the_door_closed_is_stopped_not_served(
    sched: Scheduler,
) -> None:
    frontend = await CortexFrontend(sched.address).start()
    loop = await frontend.open_loop()
    assert await loop.enqueue(1, "t", QUERY) == pb.OK
    sched.door.querier_loops.close()

    late = await QuerierWorker(sched.channel(), "late-q").open()

    assert await ended_status(late) == (grpc.StatusCode.UNKNOWN, QUEUE_STOPPED)
    assert sched.runtime.snapshot().queriers == ()
    # Still queued: the runtime's drain fails it back, exactly once.
    assert [r.payload.query_id for r in await sched.runtime.stop(drain_timeout=0)] == [1]
    assert sched.recorder.of("dispatched") == []
    await frontend.close()


async def test_the_idle_stream_gets_a_status_on_the_wire_not_a_cancel_reset() -> None:
    scheduler = await running_scheduler(QueueConfig(), implementation="lean")
    peer = await RawPeer.connect(scheduler.door.port)
    try:
        peer.open(1, request_headers(QUERIER_LOOP))
        peer.data(1, grpc_message(pb.QuerierToScheduler(querierID="raw-q").SerializeToString()))
        await until(lambda: waiting_workers(scheduler) == 1)
        await scheduler.runtime.stop(drain_timeout=0)
        await scheduler.door.stop(grace=GRACE)

        reply = await peer.until_ended(1)
        await peer.until_closed()
    finally:
        peer.close()
        await scheduler.door.stop(0)  # at once if the test failed before its own stop
        await scheduler.runtime.stop(drain_timeout=0)

    assert reply.ended
    assert reply.status["grpc-status"] == str(grpc.StatusCode.UNKNOWN.value[0])
    assert reply.status["grpc-message"] == "queue is stopped"
    assert reply.reset != CANCEL
    assert peer.goaway == (NO_ERROR, b"")
