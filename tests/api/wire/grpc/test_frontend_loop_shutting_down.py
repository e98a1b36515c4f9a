"""Frontend loops end as Cortex's scheduler ends them when the door closes.

Cortex v1.15.3's scheduler, once stopping, answers a FrontendLoop with one
SHUTTING_DOWN message and returns from the handler: status OK. The door
left a loop with nothing in flight waiting until the server's grace ran
out and then reset it (RST_STREAM CANCEL). Now, at the end of the drain,
such a loop gets that SHUTTING_DOWN and status OK at once. A frontend with
requests still queued or running keeps its loops: those requests end
exactly once, with their own reason.
"""

from __future__ import annotations

import asyncio

import grpc

from api.wire.grpc.clients import CortexFrontend, FrontendLoop, QuerierWorker, get_request
from api.wire.grpc.http2_frames import CANCEL, NO_ERROR
from scheduler_core.model import QueueConfig
from scheduler_core.pb import schedulerpb_pb2 as pb
from tests.api.wire.grpc.conftest import Scheduler, running_scheduler
from tests.api.wire.grpc.raw_http2 import RawPeer, grpc_message, request_headers, until

FRONTEND_LOOP = "/schedulerpb.SchedulerForFrontend/FrontendLoop"
QUERY = get_request("/api/v1/query", [("query", "up")])
# Far longer than the door takes to end a stream itself, so a loop still
# open when the grace ran out is reset, which the assertions tell apart.
GRACE = 10.0


async def how_it_ended(loop: FrontendLoop) -> tuple[list[int], grpc.StatusCode]:
    """The statuses the scheduler sent after the last reply read, and the call's status."""
    statuses = []
    while (message := await asyncio.wait_for(loop.call.read(), GRACE)) is not grpc.aio.EOF:
        statuses.append(message.status)
    return statuses, await loop.call.code()


async def test_an_idle_frontend_loop_gets_shutting_down_and_status_ok_when_the_drain_ends(
    sched: Scheduler,
) -> None:
    frontend = await CortexFrontend(sched.address).start()
    loops = [await frontend.open_loop() for _ in range(3)]
    worker = await QuerierWorker(sched.channel(), "q").open()
    # It had work; it has none in flight when the scheduler stops.
    assert await loops[0].enqueue(1, "t", QUERY) == pb.OK
    await worker.answer(await worker.next())
    await sched.recorder.wait_for("completed")

    assert await sched.runtime.stop(drain_timeout=1.0) == []
    await sched.door.stop(grace=GRACE)

    assert [await how_it_ended(loop) for loop in loops] == [
        ([pb.SHUTTING_DOWN], grpc.StatusCode.OK)
    ] * 3
    assert (await frontend.result(1)).code == 200
    assert sched.door.frontend_connections() == []
    await worker.close()
    await frontend.close()


async def test_requests_the_drain_fails_end_once_with_their_reason_then_the_loop_ends_cleanly(
    sched: Scheduler,
) -> None:
    frontend = await CortexFrontend(sched.address).start()
    loop = await frontend.open_loop()
    worker = await QuerierWorker(sched.channel(), "q").open()
    assert await loop.enqueue(1, "t", QUERY) == pb.OK
    assert await loop.enqueue(2, "t", QUERY) == pb.OK
    assert (await worker.next()).queryID == 1  # running; 2 stays queued

    failed = await sched.runtime.stop(drain_timeout=0)
    await sched.door.stop(grace=GRACE)

    assert sorted(r.payload.query_id for r in failed) == [1, 2]
    results = [await frontend.result(q) for q in (1, 2)]
    assert [(r.code, r.body) for r in results] == [(500, b"scheduler shutting down")] * 2
    assert sorted(r.payload.query_id for r in sched.recorder.of("failed")) == [1, 2]
    assert sched.recorder.of("completed") == sched.recorder.of("cancelled") == []
    assert await how_it_ended(loop) == ([pb.SHUTTING_DOWN], grpc.StatusCode.OK)
    await worker.close()
    await frontend.close()


async def test_a_loop_whose_frontend_has_a_request_running_is_left_open_until_it_ends(
    sched: Scheduler,
) -> None:
    frontend = await CortexFrontend(sched.address).start()
    busy = await frontend.open_loop()
    other = await CortexFrontend(sched.address).start()
    idle = await other.open_loop()
    worker = await QuerierWorker(sched.channel(), "q").open()
    assert await busy.enqueue(1, "t", QUERY) == pb.OK
    running = await worker.next()
    draining = asyncio.ensure_future(sched.runtime.stop(drain_timeout=GRACE))
    await until(lambda: sched.runtime.stopping)

    # What the door's stop does first, here before the drain has ended.
    sched.door.frontend_loops.close()
    assert await how_it_ended(idle) == ([pb.SHUTTING_DOWN], grpc.StatusCode.OK)
    await worker.answer(running)

    assert await asyncio.wait_for(draining, GRACE) == []
    assert (await frontend.result(1)).code == 200
    assert [r.payload.query_id for r in sched.recorder.of("completed")] == [1]
    assert sched.recorder.of("failed") == sched.recorder.of("cancelled") == []
    # Still open, and answered as a stopping scheduler answers.
    assert [c.address for c in sched.door.frontend_connections()] == [frontend.address]
    assert await busy.enqueue(2, "t", QUERY) == pb.SHUTTING_DOWN
    await busy.close()
    await worker.close()
    await frontend.close()
    await other.close()


async def test_a_door_stopped_while_its_runtime_still_runs_leaves_frontend_loops_open(
    sched: Scheduler,
) -> None:
    frontend = await CortexFrontend(sched.address).start()
    loop = await frontend.open_loop()

    sched.door.frontend_loops.close()

    assert await loop.enqueue(1, "t", QUERY) == pb.OK
    assert [c.address for c in sched.door.frontend_connections()] == [frontend.address]
    await loop.close()
    await frontend.close()


async def test_the_idle_loop_gets_its_status_on_the_wire_not_a_cancel_reset() -> None:
    scheduler = await running_scheduler(QueueConfig(), implementation="lean")
    peer = await RawPeer.connect(scheduler.door.port)
    init = pb.FrontendToScheduler(type=pb.INIT, frontendAddress="raw-frontend:9095")
    try:
        peer.open(1, request_headers(FRONTEND_LOOP))
        peer.data(1, grpc_message(init.SerializeToString()))
        await peer.until_messages(1, 1)
        await scheduler.runtime.stop(drain_timeout=0)
        await scheduler.door.stop(grace=GRACE)

        reply = await peer.until_ended(1)
        await peer.until_closed()
    finally:
        peer.close()
        await scheduler.door.stop(0)  # at once if the test failed before its own stop
        await scheduler.runtime.stop(drain_timeout=0)

    assert [pb.SchedulerToFrontend.FromString(m).status for m in reply.messages()] == [
        pb.OK,
        pb.SHUTTING_DOWN,
    ]
    assert reply.ended
    assert reply.status["grpc-status"] == "0"
    assert reply.reset != CANCEL
    assert peer.goaway == (NO_ERROR, b"")
