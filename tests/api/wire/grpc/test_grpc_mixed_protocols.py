"""Requests cross protocols: one queue serves gRPC and websocket clients alike."""

from __future__ import annotations

import asyncio
import logging
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from autobahn.exception import Disconnected

from api.wire.grpc.bridge import http_request_for
from api.wire.grpc.clients import CortexFrontend, QuerierWorker, get_request
from api.wire.queue_requests import cancel_one
from scheduler_core.model import Request
from tests.api.wire.grpc.conftest import NOW, Scheduler, our_errors


class WebsocketLikeHandle:
    """What the websocket transport keeps in `Request.payload`."""

    transport = "websocket"
    consumer = None  # listed as frontend "unknown", as a consumer without a name or peer
    client_id = "c1"

    def __init__(self) -> None:
        self.results: asyncio.Queue[tuple[int, Any, str]] = asyncio.Queue()

    async def on_result(
        self, request: Request, status: int, body: Any, querier_id: str, queue_seconds: float
    ) -> None:
        await self.results.put((status, body, querier_id))


def enqueue_websocket_request(scheduler: Scheduler, request_id: str) -> WebsocketLikeHandle:
    """Queue an instant query as a websocket frontend would; its handle gets the result."""
    handle = WebsocketLikeHandle()
    request = Request(
        id=request_id, tenant_id="t", query="up", api_type="query", start=NOW, end=NOW
    )
    request.payload = handle
    scheduler.runtime.enqueue(request)
    return handle


def test_a_websocket_request_becomes_the_equivalent_prometheus_call() -> None:
    request = Request(
        id="ws:1",
        tenant_id="t",
        query="rate(x[5m])",
        api_type="query_range",
        start=100.0,
        end=200.0,
        step=15.0,
        headers={"User-Agent": "grafana"},
    )

    http = http_request_for(request)

    url = urlsplit(http.url)
    assert (http.method, url.path) == ("GET", "/api/v1/query_range")
    assert dict(parse_qsl(url.query)) == {
        "query": "rate(x[5m])",
        "start": "100.0",
        "end": "200.0",
        "step": "15.0",
    }
    assert {h.key: list(h.values) for h in http.headers} == {
        "User-Agent": ["grafana"],
        "X-Scope-OrgID": ["t"],
    }


async def test_a_cortex_querier_runs_a_websocket_request_and_its_result_reaches_that_frontend(
    scheduler: Scheduler,
) -> None:
    handle = enqueue_websocket_request(scheduler, "ws:7")
    worker = await QuerierWorker(scheduler.channel(), "cortex-querier").open()

    msg = await worker.next()
    await worker.answer(msg, body=b'{"status":"success"}')

    assert msg.frontendAddress == scheduler.address
    assert urlsplit(msg.httpRequest.url).path == "/api/v1/query"
    status, body, querier_id = await asyncio.wait_for(handle.results.get(), 5.0)
    assert (status, body, querier_id) == (200, {"status": "success"}, "cortex-querier")
    await scheduler.recorder.wait_for("completed")
    assert len(scheduler.door.foreign) == 0
    await worker.close()


async def test_a_cortex_queriers_result_nested_too_deep_still_reaches_the_frontend_as_text(
    scheduler: Scheduler,
) -> None:
    handle = enqueue_websocket_request(scheduler, "ws:8")
    worker = await QuerierWorker(scheduler.channel(), "cortex-querier").open()
    deep = b"[" * 5_000 + b"]" * 5_000  # json.loads would raise RecursionError

    await worker.answer(await worker.next(), body=deep)

    status, body, _ = await asyncio.wait_for(handle.results.get(), 5.0)
    assert (status, body) == (200, deep.decode())
    await worker.close()


async def test_a_websocket_querier_answers_a_cortex_frontend_through_the_reply_handle(
    scheduler: Scheduler,
) -> None:
    frontend = await CortexFrontend(scheduler.address).start()
    loop = await frontend.open_loop()
    await loop.enqueue(3, "tenant-w", get_request("/api/v1/query", [("query", "up")]))
    worker_id = scheduler.runtime.connect_querier("ws-querier")

    request = await scheduler.runtime.next_request("ws-querier", worker_id)
    scheduler.runtime.complete(request.id)
    await request.payload.on_result(request, 200, {"data": [1]}, "ws-querier", 0.0)

    result = await frontend.result(3)
    assert (result.code, result.body, result.org_id) == (200, b'{"data": [1]}', "tenant-w")
    await frontend.close()


async def test_a_cortex_querier_leaving_between_result_and_done_ends_the_websocket_request(
    scheduler: Scheduler,
) -> None:
    """The result reached the frontend, so the request ends there: it is not re-queued."""
    handle = enqueue_websocket_request(scheduler, "ws:9")
    worker = await QuerierWorker(scheduler.channel(), "cortex-querier").open()
    msg = await worker.next()
    await worker.send_result(msg)
    await asyncio.wait_for(handle.results.get(), 5.0)

    worker.break_stream()  # gone before its "done"

    assert [r.id for r in await scheduler.recorder.wait_for("completed")] == ["ws:9"]
    assert len(scheduler.runtime.queue) == 0
    assert scheduler.recorder.of("failed") == []
    assert len(scheduler.door.foreign) == 0 and not scheduler.door.foreign.answered("ws:9")
    await worker.close()


async def test_an_operator_cancel_after_the_result_reached_the_frontend_finds_nothing_to_cancel(
    scheduler: Scheduler,
) -> None:
    """Between a Cortex querier's result and its "done" the request is answered:
    a cancel then is a 404 (None), the querier's stream is not cut, and the
    request completes once."""
    handle = enqueue_websocket_request(scheduler, "ws:11")
    worker = await QuerierWorker(scheduler.channel(), "cortex-querier").open()
    msg = await worker.next()
    await worker.send_result(msg)
    await asyncio.wait_for(handle.results.get(), 5.0)

    answered = scheduler.door.foreign.answered
    row = cancel_one(scheduler.runtime, "ws:11", "by op", replica="", names={}, answered=answered)

    assert row is None
    assert scheduler.recorder.of("failed") == []
    await worker.done()
    assert [r.id for r in await scheduler.recorder.wait_for("completed")] == ["ws:11"]
    await worker.close()


async def test_a_cortex_querier_leaving_before_its_result_still_gives_the_request_another_go(
    scheduler: Scheduler,
) -> None:
    enqueue_websocket_request(scheduler, "ws:10")
    first = await QuerierWorker(scheduler.channel(), "cortex-querier").open()
    await first.next()

    first.break_stream()

    second = await QuerierWorker(scheduler.channel(), "cortex-querier-2").open()
    again = await second.next()
    assert again.userID == "t"
    assert scheduler.recorder.of("completed") == []
    await first.close()
    await second.close()


async def test_a_result_landing_after_its_querier_s_stream_ended_is_dropped_for_the_rerun(
    sched: Scheduler,
) -> None:
    """A Cortex querier's result travels on another connection than its stream.
    Read after the stream's end, it reached the frontend while the request,
    put back, stayed queued and ran again: the frontend gets one answer, the rerun's."""
    handle = enqueue_websocket_request(sched, "ws:12")
    first = await QuerierWorker(sched.channel(), "cortex-querier").open()
    msg = await first.next()
    first.stub_for(msg)  # its connection to the "frontend" (this scheduler), kept open
    first.break_stream()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5
    while len(sched.runtime.queue) == 0:  # put back for another run
        assert loop.time() < deadline
        await asyncio.sleep(0.01)
    await first.send_result(msg, body=b'{"run":"first"}')  # then its result lands

    second = await QuerierWorker(sched.channel(), "cortex-querier-2").open()
    await second.answer(await second.next(), body=b'{"run":"second"}')
    status, body, querier = await asyncio.wait_for(handle.results.get(), 5.0)
    assert (status, body, querier) == (200, {"run": "second"}, "cortex-querier-2")
    assert [r.id for r in await sched.recorder.wait_for("completed")] == ["ws:12"]
    assert handle.results.empty() and len(sched.runtime.queue) == 0
    await first.close()
    await second.close()


async def logged(caplog: Any, message: str, timeout: float = 5.0) -> None:
    """Return once a record saying `message` is captured (the loop runs meanwhile)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while message not in caplog.messages:
        assert loop.time() < deadline, f"never logged: {message}"
        await asyncio.sleep(0.01)


async def test_a_result_for_a_websocket_frontend_that_just_closed_is_no_error(
    scheduler: Scheduler, caplog: Any
) -> None:
    class ClosedHandle(WebsocketLikeHandle):
        async def on_result(self, *args: Any) -> None:
            raise Disconnected("Attempt to send on a closed protocol")  # as Daphne's send

    caplog.set_level(logging.DEBUG, logger="api.wire.grpc.bridge")
    request = Request(id="ws:8", tenant_id="t", query="up", api_type="query", start=NOW, end=NOW)
    request.payload = ClosedHandle()
    scheduler.runtime.enqueue(request)
    worker = await QuerierWorker(scheduler.channel(), "cortex-querier").open()
    await worker.answer(await worker.next())
    await scheduler.recorder.wait_for("completed")
    # The delivery ended, its failure read and taken for a frontend that left.
    await logged(caplog, "the frontend left before a querier's result reached it")
    assert our_errors(caplog.records) == []
    await worker.close()
