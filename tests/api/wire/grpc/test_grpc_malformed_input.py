"""Bad input fails only the stream that sent it; the scheduler goes on."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from api.wire.grpc import admission
from api.wire.grpc.clients import CortexFrontend, QuerierWorker, get_request
from api.wire.grpc.server import MAX_MESSAGE_BYTES
from scheduler_core.pb import httpgrpc_pb2
from scheduler_core.pb import schedulerpb_pb2 as pb
from tests.api.wire.grpc.conftest import Scheduler

FRONTEND_LOOP = "/schedulerpb.SchedulerForFrontend/FrontendLoop"
QUERIER_LOOP = "/schedulerpb.SchedulerForQuerier/QuerierLoop"
UP = get_request("/api/v1/query", [("query", "up")])


def raw_stream(channel: grpc.aio.Channel, method: str) -> grpc.aio.StreamStreamCall:
    """A stream that sends bytes exactly as given, valid protobuf or not."""
    return channel.stream_stream(
        method, request_serializer=lambda b: b, response_deserializer=lambda b: b
    )()


async def status_of(call: grpc.aio.StreamStreamCall, *payloads: bytes) -> grpc.StatusCode:
    for payload in payloads:
        await call.write(payload)
    await call.done_writing()
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        while True:
            await call.read()
    return failed.value.code()


async def still_schedules(scheduler: Scheduler, frontend: CortexFrontend, query_id: int) -> None:
    loop = await frontend.open_loop()
    assert await loop.enqueue(query_id, "t", UP) == pb.OK
    worker = await QuerierWorker(scheduler.channel(), f"q-{query_id}").open()
    assert (await worker.next()).queryID == query_id
    await worker.done()


@pytest.mark.parametrize(
    "payload",
    [
        b"\xff\xff\xff",  # a field tag with no end
        b"\x12\x05ab",  # a string field cut short: a truncated message
        pb.FrontendToScheduler(type=pb.INIT, frontendAddress="f:1").SerializeToString()[:-2],
    ],
)
async def test_a_malformed_frontend_message_fails_only_its_stream(
    scheduler: Scheduler, payload: bytes
) -> None:
    frontend = await CortexFrontend(scheduler.address).start()
    healthy = await frontend.open_loop()
    await healthy.enqueue(1, "t", UP)

    code = await status_of(raw_stream(scheduler.channel(), FRONTEND_LOOP), payload)

    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert await healthy.enqueue(2, "t", UP) == pb.OK
    assert scheduler.runtime.queue.tenant_length("t") == 2
    await frontend.close()


async def test_an_unknown_message_type_fails_the_stream_after_init(scheduler: Scheduler) -> None:
    init = pb.FrontendToScheduler(type=pb.INIT, frontendAddress="f:1").SerializeToString()
    unknown_type = b"\x08\x07"  # field 1 (type) = 7, which no enum value names

    code = await status_of(raw_stream(scheduler.channel(), FRONTEND_LOOP), init, unknown_type)

    assert code == grpc.StatusCode.INVALID_ARGUMENT
    frontend = await CortexFrontend(scheduler.address).start()
    await still_schedules(scheduler, frontend, 1)
    await frontend.close()


async def test_enqueue_before_init_is_refused(scheduler: Scheduler) -> None:
    enqueue = pb.FrontendToScheduler(type=pb.ENQUEUE, queryID=1, userID="t")

    code = await status_of(
        raw_stream(scheduler.channel(), FRONTEND_LOOP), enqueue.SerializeToString()
    )

    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert len(scheduler.runtime.queue) == 0


async def test_an_oversized_request_fails_only_its_stream(scheduler: Scheduler) -> None:
    frontend = await CortexFrontend(scheduler.address).start()
    loop = await frontend.open_loop()
    huge = httpgrpc_pb2.HTTPRequest(
        method="POST", url="/api/v1/query", body=b"x" * MAX_MESSAGE_BYTES
    )

    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await loop.enqueue(1, "t", huge)

    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    await still_schedules(scheduler, frontend, 2)
    await frontend.close()


async def test_enqueue_errors_are_answered_in_order_on_a_stream_that_goes_on(
    scheduler: Scheduler,
) -> None:
    frontend = await CortexFrontend(scheduler.address).start()
    loop = await frontend.open_loop()

    no_tenant = await loop.send(pb.FrontendToScheduler(type=pb.ENQUEUE, queryID=1, httpRequest=UP))
    no_request = await loop.send(pb.FrontendToScheduler(type=pb.ENQUEUE, queryID=2, userID="t"))
    first = await loop.enqueue(3, "t", UP)
    duplicate = await loop.send(
        pb.FrontendToScheduler(type=pb.ENQUEUE, queryID=3, userID="t", httpRequest=UP)
    )
    mimir_protobuf = await loop.send(
        pb.FrontendToScheduler(type=pb.ENQUEUE, queryID=4, userID="t", protobufRequest=b"\x0a\x00")
    )

    assert (no_tenant.status, no_tenant.error) == (pb.ERROR, "no org id")
    assert (no_request.status, no_request.error) == (pb.ERROR, "enqueue without httpRequest")
    assert first == pb.OK
    assert duplicate.status == pb.ERROR and "already queued" in duplicate.error
    assert mimir_protobuf.status == pb.ERROR and "protobuf" in mimir_protobuf.error
    assert await loop.enqueue(5, "t", UP) == pb.OK
    await frontend.close()


@pytest.mark.parametrize(
    "url", ["//[::1/api/v1/query?query=up", "http://[bad/api/v1/query_range?query=up&step=60"]
)
async def test_a_url_urlsplit_refuses_is_still_queued_and_its_stream_goes_on(
    scheduler: Scheduler, url: str
) -> None:
    # urlsplit raises ValueError for an unclosed "[": it once ended the stream.
    frontend = await CortexFrontend(scheduler.address).start()
    loop = await frontend.open_loop()
    odd = httpgrpc_pb2.HTTPRequest(method="GET", url=url)

    assert await loop.enqueue(1, "t", odd) == pb.OK
    assert await loop.enqueue(2, "t", UP) == pb.OK
    worker = await QuerierWorker(scheduler.channel(), "q-odd").open()
    first = (await worker.next()).queryID
    await worker.done()
    assert {first, (await worker.next()).queryID} == {1, 2}
    await worker.close()
    await frontend.close()


async def test_a_bug_admitting_one_query_fails_that_query_not_its_stream(
    scheduler: Scheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = admission.parse_forwarded

    def parse_or_break(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        if "break" in url:
            raise RuntimeError("a bug")
        return real(method, url, *args, **kwargs)

    monkeypatch.setattr(admission, "parse_forwarded", parse_or_break)
    frontend = await CortexFrontend(scheduler.address).start()
    loop = await frontend.open_loop()
    assert await loop.enqueue(1, "t", UP) == pb.OK

    broken = await loop.send(
        pb.FrontendToScheduler(
            type=pb.ENQUEUE, queryID=2, userID="t", httpRequest=get_request("/break", [])
        )
    )

    assert broken.status == pb.ERROR and "internal error" in broken.error
    assert await loop.enqueue(3, "t", UP) == pb.OK
    queued = [r for kind, r, _ in scheduler.recorder.events if kind == "enqueued"]
    assert len(queued) == 2  # 1 and 3; the broken one was never queued
    await frontend.close()


async def test_a_malformed_querier_message_fails_only_that_worker(scheduler: Scheduler) -> None:
    code = await status_of(raw_stream(scheduler.channel(), QUERIER_LOOP), b"\x0a\x09short")

    assert code == grpc.StatusCode.INVALID_ARGUMENT
    frontend = await CortexFrontend(scheduler.address).start()
    await still_schedules(scheduler, frontend, 1)
    await frontend.close()


async def test_a_querier_stream_without_querier_id_is_refused(scheduler: Scheduler) -> None:
    code = await status_of(raw_stream(scheduler.channel(), QUERIER_LOOP), b"")

    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert scheduler.runtime.snapshot().queriers == ()


@pytest.mark.parametrize(
    ("querier_id", "problem"),
    [
        ("q\nforged log line", "control character U+000A"),
        ("q\x00", "control character U+0000"),
        ("q" * 257, "longer than 256 characters"),
    ],
)
async def test_a_querier_id_no_log_or_page_could_show_is_refused_naming_why(
    scheduler: Scheduler, querier_id: str, problem: str
) -> None:
    call = raw_stream(scheduler.channel(), QUERIER_LOOP)
    await call.write(pb.QuerierToScheduler(querierID=querier_id).SerializeToString())
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await asyncio.wait_for(call.read(), 10)  # accepted, it would wait for work
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert problem in (refused.value.details() or "")
    assert scheduler.runtime.snapshot().queriers == ()
