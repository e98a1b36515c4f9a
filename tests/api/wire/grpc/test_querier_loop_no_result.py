"""A Cortex querier that says "done" without its result, for a request only we can answer.

A Cortex querier sends its result with `QueryResult` and then "done"; when
that call fails (a result over the scheduler's message size, a network
error) it logs the error and says "done" all the same. For a Cortex
frontend's request the frontend is told by its own timeout; for a websocket
frontend's request the scheduler relays the result, knows none came, and
must fail the request back rather than complete it and leave the frontend
waiting.
"""

from __future__ import annotations

from api.wire.grpc.clients import CortexFrontend, QuerierWorker, get_request
from scheduler_core.model import QuerierNoResult, QueueConfig
from tests.api.wire.grpc.conftest import running_scheduler
from tests.api.wire.grpc.test_grpc_mixed_protocols import enqueue_websocket_request


async def test_a_websocket_request_whose_cortex_querier_said_done_without_a_result_fails() -> None:
    scheduler = await running_scheduler(QueueConfig())
    enqueue_websocket_request(scheduler, "ws:lost-result")
    worker = await QuerierWorker(scheduler.channel(), "cortex-q").open()
    try:
        await worker.next()
        await worker.done()  # its QueryResult call never reached us

        failed = await scheduler.recorder.wait_for("failed")
    finally:
        await worker.close()
        await scheduler.door.stop(0)
        await scheduler.runtime.stop(drain_timeout=0)

    assert [request.id for request in failed] == ["ws:lost-result"]
    assert scheduler.recorder.of("completed") == []
    reason = next(r for kind, _, r in scheduler.recorder.events if kind == "failed")
    assert isinstance(reason, QuerierNoResult)
    assert reason == "querier cortex-q finished the request without sending its result"


async def test_a_cortex_frontends_request_done_by_its_querier_completes() -> None:
    scheduler = await running_scheduler(QueueConfig())
    frontend = await CortexFrontend(scheduler.address).start()
    loop = await frontend.open_loop()
    worker = await QuerierWorker(scheduler.channel(), "cortex-q").open()
    try:
        await loop.enqueue(1, "t", get_request("/api/v1/query", [("query", "up")]))
        await worker.next()
        await worker.done()  # the result went to the frontend itself: not ours to know

        completed = await scheduler.recorder.wait_for("completed")
    finally:
        await worker.close()
        await frontend.close()
        await scheduler.door.stop(0)
        await scheduler.runtime.stop(drain_timeout=0)

    assert len(completed) == 1
    assert scheduler.recorder.of("failed") == []
