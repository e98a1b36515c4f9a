"""FrontendLoop answers every message once, in order, on both servers.

On the lean door the answers are made as messages arrive (`answer_each`,
`LeanCall.serve_inline`); on grpcio by reading and writing in turn. Both must
end a stream that sends garbage the same way, and the lean door must keep
order when the peer's window holds its replies back.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator

import grpc
import pytest

from api.wire.grpc.admission import Admission
from api.wire.grpc.clients import get_request
from api.wire.grpc.http2_frames import (
    DATA,
    HEADERS,
    PREFACE,
    SETTINGS,
    WINDOW_UPDATE,
    encode_headers,
    frame,
)
from api.wire.grpc.server import GrpcFrontDoor, start_grpc_server
from scheduler_core.model import QueueConfig
from scheduler_core.pb import schedulerpb_pb2 as pb
from scheduler_core.runtime import SchedulerRuntime
from tests.api.wire.grpc.conftest import NOW

FRONTEND_LOOP = "/schedulerpb.SchedulerForFrontend/FrontendLoop"
UP = get_request("/api/v1/query", [("query", "up")])


async def running_door(implementation: str) -> GrpcFrontDoor:
    runtime = SchedulerRuntime(QueueConfig(), forget_check_interval=3600.0)
    await runtime.start()
    return await start_grpc_server(
        runtime,
        port=0,
        admission=Admission(runtime, wall_clock=lambda: NOW),
        implementation=implementation,
    )


async def stopped(door: GrpcFrontDoor) -> None:
    await door.stop(0)
    await door.runtime.stop(drain_timeout=0)


@pytest.fixture(params=["lean", "grpcio"])
async def door(request: pytest.FixtureRequest) -> AsyncIterator[GrpcFrontDoor]:
    door = await running_door(request.param)
    yield door
    await stopped(door)


@pytest.fixture
async def lean_door() -> AsyncIterator[GrpcFrontDoor]:
    door = await running_door("lean")
    yield door
    await stopped(door)


def init() -> pb.FrontendToScheduler:
    return pb.FrontendToScheduler(type=pb.INIT, frontendAddress="fe:1")


def enqueue(query_id: int) -> pb.FrontendToScheduler:
    return pb.FrontendToScheduler(type=pb.ENQUEUE, queryID=query_id, userID="t", httpRequest=UP)


async def replies_to(door: GrpcFrontDoor, *messages: pb.FrontendToScheduler) -> list[object]:
    """Write every message before reading any reply; the replies, then the status."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{door.port}") as channel:
        call = channel.stream_stream(
            FRONTEND_LOOP,
            request_serializer=pb.FrontendToScheduler.SerializeToString,
            response_deserializer=pb.SchedulerToFrontend.FromString,
        )()
        for message in messages:
            await call.write(message)
        await call.done_writing()
        got: list[object] = []
        try:
            while (reply := await call.read()) is not grpc.aio.EOF:
                got.append(reply.status)
        except grpc.aio.AioRpcError as exc:
            got.append(exc.code())
        else:
            got.append(await call.code())
        return got


async def test_pipelined_enqueues_get_one_reply_each_in_order(door: GrpcFrontDoor) -> None:
    got = await replies_to(door, init(), enqueue(1), enqueue(1), enqueue(2))

    assert got == [pb.OK, pb.OK, pb.ERROR, pb.OK, grpc.StatusCode.OK]


async def test_an_unknown_message_type_ends_the_stream_after_the_replies_before_it(
    door: GrpcFrontDoor,
) -> None:
    unknown = pb.FrontendToScheduler(type=pb.INIT, frontendAddress="fe:1")
    # Nothing is written after it: the lean door may end the call before a
    # later write lands, and grpcio's client then fails that write instead.
    got = await replies_to(door, init(), enqueue(1), unknown)

    assert got == [pb.OK, pb.OK, grpc.StatusCode.INVALID_ARGUMENT]
    # The stream's requests go with it. grpcio may send the status before the
    # servicer's clean-up has run (CI once saw the request still queued): its
    # completion queue is polled on another thread, so wait, with a deadline.
    for _ in range(500):
        if not door.runtime.queue.tenant_length("t"):
            break
        await asyncio.sleep(0.01)
    assert door.runtime.queue.tenant_length("t") == 0


async def test_a_malformed_message_after_init_ends_the_stream_as_invalid_argument(
    door: GrpcFrontDoor,
) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{door.port}") as channel:
        call = channel.stream_stream(
            FRONTEND_LOOP, request_serializer=lambda b: b, response_deserializer=lambda b: b
        )()
        await call.write(init().SerializeToString())
        await call.write(enqueue(1).SerializeToString())
        await call.write(b"\x12\x05ab")  # a string field cut short
        await call.done_writing()
        replies = [await call.read(), await call.read()]
        with pytest.raises(grpc.aio.AioRpcError) as ended:
            await call.read()

    assert [pb.SchedulerToFrontend.FromString(r).status for r in replies] == [pb.OK, pb.OK]
    assert ended.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "malformed" in (ended.value.details() or "")


def h2(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return frame(kind, flags, stream, payload)


def grpc_message(message: pb.FrontendToScheduler) -> bytes:
    data = message.SerializeToString()
    return b"\x00" + len(data).to_bytes(4, "big") + data


async def read_replies(reader: asyncio.StreamReader, count: int) -> list[pb.SchedulerToFrontend]:
    """The next `count` FrontendLoop replies on stream 1 (other frames skipped)."""
    data = b""
    while len(split_messages(data)) < count:
        head = await asyncio.wait_for(reader.readexactly(9), 10)
        word, _, stream = struct.unpack(">IBI", head)
        payload = await reader.readexactly(word >> 8)
        if word & 0xFF == DATA and stream == 1:
            data += payload
    return split_messages(data)


def split_messages(data: bytes) -> list[pb.SchedulerToFrontend]:
    """gRPC messages (5-byte prefix each) back to back in `data`."""
    out = []
    while len(data) >= 5:
        size = int.from_bytes(data[1:5], "big")
        out.append(pb.SchedulerToFrontend.FromString(data[5 : 5 + size]))
        data = data[5 + size :]
    return out


async def test_replies_held_back_by_the_peers_window_go_out_in_order_once_it_opens(
    lean_door: GrpcFrontDoor,
) -> None:
    door = lean_door  # raw frames drive the lean door's own flow control
    reader, writer = await asyncio.open_connection("127.0.0.1", door.port)
    # A 12-byte stream window: the INIT reply and one OK (5 bytes each) fit,
    # the ERROR after them does not.
    settings = struct.pack(">HI", 0x4, 12)
    headers = encode_headers(
        [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", FRONTEND_LOOP),
            (":authority", "test"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
        ]
    )
    body = b"".join(grpc_message(m) for m in (init(), enqueue(1), enqueue(1), enqueue(2)))
    writer.write(
        PREFACE
        + h2(SETTINGS, 0, 0, settings)
        + h2(SETTINGS, 1, 0)
        + h2(HEADERS, 0x4, 1, headers)
        + h2(DATA, 0, 1, body)
    )
    await writer.drain()
    try:
        first = await read_replies(reader, 2)
        assert door.runtime.queue.tenant_length("t") == 1  # q1 queued; the duplicate waits
        writer.write(h2(WINDOW_UPDATE, 0, 1, (1 << 16).to_bytes(4, "big")))
        await writer.drain()
        rest = await read_replies(reader, 2)
    finally:
        writer.close()
    replies = first + rest
    assert [r.status for r in replies] == [pb.OK, pb.OK, pb.ERROR, pb.OK]
    assert "query ID 1 " in replies[2].error
    assert door.runtime.queue.tenant_length("t") == 2
