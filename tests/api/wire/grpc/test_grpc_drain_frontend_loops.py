"""A draining scheduler answers the queries of a Cortex frontend that closed its loops.

A Cortex v1.15.3 query-frontend answered SHUTTING_DOWN closes that loop and
dials it again, and the scheduler answers the new INIT SHUTTING_DOWN too, so
under load every loop of a frontend ends during the drain. The frontend is
still there, waiting for the queries it enqueued before: the queriers send
their results straight to it. Cancelled when its last loop closed (as for a
frontend that went away), they never got an answer: the querier's stream was
ended with CANCELLED, so the query's own context ended too, and the user's
HTTP request hung past every Cortex timeout (45 of 2477 queries still without
an answer after 150 s, over three rounds of rolling restarts under real Cortex).
"""

from __future__ import annotations

import asyncio
import contextlib

import grpc

from api.wire.grpc.clients import CortexFrontend, FrontendLoop, QuerierWorker, get_request
from scheduler_core.pb import schedulerpb_pb2 as pb
from tests.api.wire.grpc.conftest import NOW, Scheduler
from tests.api.wire.grpc.raw_http2 import until

RANGE = "/prometheus/api/v1/query_range"
QUERY = get_request(
    RANGE, [("query", "up"), ("start", str(NOW - 3600)), ("end", str(NOW)), ("step", "15s")]
)


async def close_every_loop_as_cortex_does(frontend: CortexFrontend, loop: FrontendLoop) -> int:
    """The frontend's next ENQUEUE is refused; it closes the loop and cannot open another."""
    status = await loop.enqueue(99, "t", QUERY)
    await loop.close()
    with contextlib.suppress(RuntimeError):  # INIT answered SHUTTING_DOWN
        await frontend.open_loop()
    return status


async def test_a_frontend_whose_loops_all_close_during_the_drain_still_gets_its_answers(
    scheduler: Scheduler,
) -> None:
    frontend = await CortexFrontend(scheduler.address).start()
    loop = await frontend.open_loop()
    await loop.enqueue(1, "t", QUERY)
    await loop.enqueue(2, "t", QUERY)
    worker = await QuerierWorker(scheduler.channel(), "q").open()
    running = await worker.next()
    stopping = asyncio.ensure_future(scheduler.runtime.stop(drain_timeout=5.0))
    await asyncio.sleep(0)

    refused = await close_every_loop_as_cortex_does(frontend, loop)
    await until(lambda: not scheduler.door.frontend_connections())
    await worker.answer(running)
    queued = await worker.next()
    await worker.answer(queued)

    assert refused == pb.SHUTTING_DOWN
    assert await asyncio.wait_for(stopping, 5.0) == []
    assert [(await frontend.result(q)).code for q in (1, 2)] == [200, 200]
    assert scheduler.recorder.of("cancelled") == []
    assert sorted(r.payload.query_id for r in scheduler.recorder.of("completed")) == [1, 2]
    await worker.close()
    await frontend.close()


async def test_the_drain_deadline_fails_back_what_a_frontend_without_loops_still_waits_for(
    scheduler: Scheduler,
) -> None:
    frontend = await CortexFrontend(scheduler.address).start()
    loop = await frontend.open_loop()
    await loop.enqueue(1, "t-late", QUERY)
    stopping = asyncio.ensure_future(scheduler.runtime.stop(drain_timeout=0.2))
    await asyncio.sleep(0)

    await close_every_loop_as_cortex_does(frontend, loop)
    await until(lambda: not scheduler.door.frontend_connections())

    assert [r.payload.query_id for r in await asyncio.wait_for(stopping, 5.0)] == [1]
    result = await frontend.result(1)
    assert (result.code, result.org_id) == (500, "t-late")
    assert b"shutting down" in result.body
    assert scheduler.recorder.of("cancelled") == []
    await frontend.close()


async def test_a_frontend_that_closes_its_last_loop_before_any_drain_has_its_queries_cancelled(
    scheduler: Scheduler,
) -> None:
    frontend = await CortexFrontend(scheduler.address).start()
    loop = await frontend.open_loop()
    await loop.enqueue(1, "t", QUERY)
    worker = await QuerierWorker(scheduler.channel(), "q").open()
    await worker.next()

    await loop.close()

    cancelled = await scheduler.recorder.wait_for("cancelled")
    assert [r.payload.query_id for r in cancelled] == [1]
    try:
        await worker.next()
    except grpc.aio.AioRpcError as ended:
        assert ended.code() == grpc.StatusCode.CANCELLED
    else:
        raise AssertionError("the worker running a cancelled query kept its stream")
    await worker.close()
    await frontend.close()
