"""The lean door's HTTP/2 and gRPC edges: compression, windows, pings, bad peers, stop.

The rest of its behaviour is what every test in this folder checks with
whichever server GRPC_SERVER picks (lean by default).
"""

from __future__ import annotations

import asyncio
import struct

import grpc
import pytest
import uvloop

from api.wire.grpc.clients import CortexFrontend, FrontendLoop, QuerierWorker, post_request
from api.wire.grpc.http2_frames import ENHANCE_YOUR_CALM, PREFACE, PROTOCOL_ERROR, STREAM_WINDOW
from api.wire.grpc.lean_client import GrpcCallError, LeanChannels
from api.wire.grpc.server import GrpcFrontDoor
from scheduler_core.pb import frontendv2pb_pb2, httpgrpc_pb2
from scheduler_core.pb import schedulerpb_pb2 as pb
from scheduler_core.pb.schedulerpb_pb2_grpc import SchedulerForFrontendStub

GOAWAY = 7


def address(door: GrpcFrontDoor) -> str:
    return f"127.0.0.1:{door.port}"


async def test_this_module_runs_on_asyncios_loop_and_on_uvloop_as_its_ids_say(
    request: pytest.FixtureRequest,
) -> None:
    on_uvloop = isinstance(asyncio.get_running_loop(), uvloop.Loop)
    assert request.node.name.endswith("[uvloop]" if on_uvloop else "[asyncio]")


async def test_a_client_that_gzips_its_messages_is_served(door: GrpcFrontDoor) -> None:
    query = "sum(rate(x[5m]))" + " or up" * 500  # compressible, so grpcio compresses it
    async with grpc.aio.insecure_channel(address(door), compression=grpc.Compression.Gzip) as ch:
        frontend = FrontendLoop(SchedulerForFrontendStub(ch).FrontendLoop())
        init = pb.FrontendToScheduler(type=pb.INIT, frontendAddress="fe:1")
        assert (await frontend.send(init)).status == pb.OK
        request = post_request("/api/v1/query", [("query", query)])

        assert await frontend.enqueue(1, "tenant-gz", request) == pb.OK
        worker = await QuerierWorker(ch, "q-gz").open()
        message = await worker.next()
        assert message.httpRequest.body == request.body
        await worker.done()


async def test_messages_larger_than_a_stream_window_travel_whole_both_ways(
    door: GrpcFrontDoor,
) -> None:
    body = ("query=" + "x" * (3 * STREAM_WINDOW)).encode()  # 3 windows in, 48 of grpcio's out
    frontend = await CortexFrontend(address(door)).start()
    async with grpc.aio.insecure_channel(address(door)) as channel:
        try:
            loop = await frontend.open_loop()
            request = post_request("/api/v1/query", [])
            request.body = body
            assert await loop.enqueue(1, "tenant-big", request) == pb.OK
            worker = await QuerierWorker(channel, "q-big").open()

            message = await worker.next()

            assert message.httpRequest.body == body
            await worker.done()
        finally:
            await frontend.close()


async def raw_frames(door: GrpcFrontDoor, payload: bytes) -> list[tuple[int, int, bytes]]:
    """Send raw bytes; every frame the door sends back until it closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", door.port)
    writer.write(payload)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    frames, offset = [], 0
    while offset + 9 <= len(data):
        word, flags, _ = struct.unpack_from(">IBI", data, offset)
        length = word >> 8
        frames.append((word & 0xFF, flags, data[offset + 9 : offset + 9 + length]))
        offset += 9 + length
    return frames


def frame(kind: int, flags: int, stream_id: int, payload: bytes = b"") -> bytes:
    return struct.pack(">IBI", len(payload) << 8 | kind, flags, stream_id) + payload


def goaway_code(frames: list[tuple[int, int, bytes]]) -> int:
    (payload,) = [p for kind, _, p in frames if kind == GOAWAY]
    return int.from_bytes(payload[4:8], "big")


async def test_a_ping_flood_gets_goaway_enhance_your_calm(door: GrpcFrontDoor) -> None:
    pings = b"".join(frame(6, 0, 0, n.to_bytes(8, "big")) for n in range(10))

    frames = await raw_frames(door, PREFACE + frame(4, 0, 0) + pings)

    assert goaway_code(frames) == ENHANCE_YOUR_CALM
    assert sum(1 for kind, flags, _ in frames if kind == 6 and flags & 1) <= 3


async def test_a_peer_that_does_not_speak_http2_is_sent_goaway_and_closed(
    door: GrpcFrontDoor,
) -> None:
    frames = await raw_frames(door, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")

    assert goaway_code(frames) == PROTOCOL_ERROR


async def test_data_on_a_stream_never_opened_ends_the_connection(door: GrpcFrontDoor) -> None:
    frames = await raw_frames(door, PREFACE + frame(4, 0, 0) + frame(0, 0, 5, b"\x00" * 5))

    assert goaway_code(frames) == PROTOCOL_ERROR


async def test_stop_lets_an_open_stream_finish_within_the_grace_and_refuses_new_ones(
    door: GrpcFrontDoor,
) -> None:
    frontend = await CortexFrontend(address(door)).start()
    try:
        loop = await frontend.open_loop()
        stopping = asyncio.get_running_loop().create_task(door.stop(30))
        await asyncio.sleep(0)  # let stop send GOAWAY

        # The open stream is still answered; the runtime is still accepting.
        assert await loop.enqueue(1, "tenant-stop", post_request("/api/v1/query", [])) == pb.OK
        assert not stopping.done()
        await loop.close()
        await asyncio.wait_for(stopping, 10)
    finally:
        await frontend.close()
    assert door.server.connections == set() or all(
        c.transport.is_closing() for c in door.server.connections
    )


async def test_the_lean_client_calls_a_grpcio_server_and_reuses_its_connection() -> None:
    frontend = await CortexFrontend("127.0.0.1:1").start()  # only its QueryResult server
    channels = LeanChannels(None)
    try:
        for query_id in (1, 2):
            request = frontendv2pb_pb2.QueryResultRequest(
                queryID=query_id, httpResponse=httpgrpc_pb2.HTTPResponse(Code=200, body=b"ok")
            )
            response = await channels.unary(
                frontend.address,
                "/frontendv2pb.FrontendForQuerier/QueryResult",
                request.SerializeToString(),
                (("x-scope-orgid", "tenant-lean"),),
                5.0,
            )
            assert response == b""  # an empty QueryResultResponse
        results = [await frontend.result(i) for i in (1, 2)]
        assert [(r.code, r.body, r.org_id) for r in results] == [(200, b"ok", "tenant-lean")] * 2
        assert len(channels._connections) == 1
    finally:
        channels.close()
        await frontend.close()


async def test_the_lean_client_reports_an_unreachable_or_unknown_method_by_status(
    door: GrpcFrontDoor,
) -> None:
    channels = LeanChannels(None)
    try:
        with pytest.raises(GrpcCallError) as unreachable:
            await channels.unary("127.0.0.1:1", "/x.Y/Z", b"", (), 5.0)
        with pytest.raises(GrpcCallError) as unknown:
            await channels.unary(address(door), "/x.Y/Z", b"", (), 5.0)
    finally:
        channels.close()
    assert (unreachable.value.code, unknown.value.code) == (14, 12)


async def test_a_unary_request_that_does_not_decode_is_invalid_argument(
    door: GrpcFrontDoor,
) -> None:
    # It was a logged traceback and UNKNOWN; streams already said INVALID_ARGUMENT.
    async with grpc.aio.insecure_channel(address(door)) as channel:
        call = channel.unary_unary(
            "/schedulerpb.SchedulerForQuerier/NotifyQuerierShutdown",
            request_serializer=lambda b: b,
            response_deserializer=lambda b: b,
        )
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await call(b"\xff\xff\xff")
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "malformed message" in (refused.value.details() or "")
