"""The lean door's sending side against a peer with grpc-go's windows.

grpc-go (Cortex's queriers and frontends) opens 64 KiB windows and widens
them only as DATA arrives. A message larger than the window must therefore
go in pieces; a stream whose window stays shut must hold back only its own
frames; and a call's status must not overtake the replies still waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from api.wire.grpc.http2_frames import CONNECTION_WINDOW, RST_STREAM, STREAM_WINDOW, WINDOW_UPDATE
from api.wire.grpc.http2_frames import frame as h2_frame
from api.wire.grpc.lean_client import GrpcCallError, LeanChannels
from api.wire.grpc.lean_server import LeanGrpcServer
from api.wire.grpc.server import GrpcFrontDoor
from scheduler_core.pb import frontendv2pb_pb2, httpgrpc_pb2
from scheduler_core.pb import schedulerpb_pb2 as pb
from tests.api.wire.grpc.raw_http2 import RawPeer, grpc_message, request_headers, until
from tests.load.h2lite import ClientConnection

FRONTEND_LOOP = "/schedulerpb.SchedulerForFrontend/FrontendLoop"
QUERIER_LOOP = "/schedulerpb.SchedulerForQuerier/QuerierLoop"
QUERY_RESULT = "/frontendv2pb.FrontendForQuerier/QueryResult"
INITIAL_WINDOW = 0x4


def lean(door: GrpcFrontDoor) -> LeanGrpcServer:
    assert isinstance(door.server, LeanGrpcServer)
    return door.server


def init() -> bytes:
    return grpc_message(
        pb.FrontendToScheduler(type=pb.INIT, frontendAddress="fe:1").SerializeToString()
    )


def enqueue(query_id: int, body: bytes = b"") -> bytes:
    request = httpgrpc_pb2.HTTPRequest(method="POST", url="/api/v1/query", body=body)
    message = pb.FrontendToScheduler(
        type=pb.ENQUEUE, queryID=query_id, userID="t", httpRequest=request
    )
    return grpc_message(message.SerializeToString())


async def test_a_request_larger_than_a_querier_s_64_kib_window_reaches_it_in_pieces(
    door: GrpcFrontDoor,
) -> None:
    body = b"query=" + b"x" * 200_000
    frontend = await RawPeer.connect(door.port)
    querier = await RawPeer.connect(door.port)  # no SETTINGS: 64 KiB windows
    try:
        frontend.open(1, request_headers(FRONTEND_LOOP))
        frontend.data(1, init() + enqueue(1, body))
        replies = await frontend.until_messages(1, 2)
        assert [pb.SchedulerToFrontend.FromString(m).status for m in replies.messages()] == [
            pb.OK,
            pb.OK,
        ]
        await a_querier_is_handed(querier, body)
    finally:
        frontend.close()
        querier.close()


async def a_querier_is_handed(querier: RawPeer, body: bytes) -> None:
    """A querier loop opened on `querier` gets the queued request, `body` whole."""
    querier.open(1, request_headers(QUERIER_LOOP))
    querier.data(1, grpc_message(pb.QuerierToScheduler(querierID="q").SerializeToString()))
    (message,) = (await querier.until_messages(1, 1)).messages()
    assert pb.SchedulerToQuerier.FromString(message).httpRequest.body == body


async def stalled_loop(door: GrpcFrontDoor, enqueues: bytes) -> tuple[RawPeer, Any]:
    """A frontend loop on stream 1 of a peer that does not read, with `enqueues` sent.

    12-byte stream windows: the INIT reply and one OK (5 bytes each) fit, the
    third reply waits until the test opens the stream's window.
    """
    peer = await RawPeer.connect(door.port, struct.pack(">HI", INITIAL_WINDOW, 12))
    peer.grant = False  # windows open only when the test says
    try:
        peer.open(1, request_headers(FRONTEND_LOOP))
        peer.data(1, init() + enqueues)
        await peer.until_messages(1, 2)
        (conn,) = lean(door).connections
        await until(lambda: conn.streams[1].queued)
    except BaseException:
        peer.close()
        raise
    return peer, conn


async def test_a_stream_whose_window_stays_shut_holds_back_only_its_own_replies(
    door: GrpcFrontDoor,
) -> None:
    peer, _ = await stalled_loop(door, enqueue(1) + enqueue(2))
    try:
        peer.open(3, request_headers(FRONTEND_LOOP))
        peer.data(3, init())
        other = await peer.until_messages(3, 1)

        assert pb.SchedulerToFrontend.FromString(other.messages()[0]).status == pb.OK
        assert len(peer.reply(1).messages()) == 2
        peer.send(h2_frame(WINDOW_UPDATE, 0, 1, (1 << 16).to_bytes(4, "big")))
        held = await peer.until_messages(1, 3)
        assert [pb.SchedulerToFrontend.FromString(m).status for m in held.messages()] == [
            pb.OK,
            pb.OK,
            pb.OK,
        ]
    finally:
        peer.close()


async def test_a_calls_status_waits_behind_the_replies_its_window_holds(
    door: GrpcFrontDoor,
) -> None:
    peer, conn = await stalled_loop(door, enqueue(1) + enqueue(1))  # the duplicate's ERROR waits
    try:
        # A length prefix over the limit ends the call at once, replies or not.
        peer.data(1, grpc_message(b"", length=lean(door).max_message + 1))
        await until(lambda: conn.streams[1].app.finished)

        peer.send(h2_frame(WINDOW_UPDATE, 0, 1, (1 << 16).to_bytes(4, "big")))
        reply = await peer.until_ended(1)

        statuses = [pb.SchedulerToFrontend.FromString(m).status for m in reply.messages()]
        assert statuses == [pb.OK, pb.OK, pb.ERROR]
        assert reply.status["grpc-status"] == str(grpc.StatusCode.RESOURCE_EXHAUSTED.value[0])
        assert reply.reset is None  # a reset would have thrown the waiting replies away
    finally:
        peer.close()


async def test_window_held_for_a_reset_call_goes_back_to_its_connection(
    door: GrpcFrontDoor,
) -> None:
    # A querier worker reads its first message, then waits for work: what it
    # sends next stays unread, and past a stream window of it the door holds
    # the window back. Reset, that hold must not shrink the connection's.
    peer = await RawPeer.connect(door.port)
    try:
        peer.open(1, request_headers(QUERIER_LOOP))
        first = pb.QuerierToScheduler(querierID="q").SerializeToString()
        unread = grpc_message(b"\x00" * 600_000)
        peer.data(1, grpc_message(first) + unread)
        await peer.writer.drain()
        (conn,) = lean(door).connections
        # In and granted back while under a window is unread; held once over.
        await until(lambda: 1 in conn.streams and conn.streams[1].app._unread >= 600_000)
        peer.data(1, unread)
        await until(lambda: conn.streams[1].app._held)

        peer.send(h2_frame(RST_STREAM, 0, 1, (8).to_bytes(4, "big")))
        await until(lambda: 1 not in conn.streams)

        assert conn._recv_window + conn._recv_unacked == CONNECTION_WINDOW
    finally:
        peer.close()


# A QueryResult over grpc-go's 64 KiB window, for the clients that send one.
LARGE_RESULT = frontendv2pb_pb2.QueryResultRequest(
    queryID=7, httpResponse=httpgrpc_pb2.HTTPResponse(Code=200, body=b"r" * 300_000)
).SerializeToString()


@contextlib.asynccontextmanager
async def go_frontend() -> AsyncIterator[tuple[int, asyncio.Future[bytes]]]:
    """A frontend with grpc-go's server windows (64 KiB) answering one unary call
    (an empty QueryResultResponse): its port, and the request message it got."""
    received: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    async def frontend(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = RawPeer(reader, writer)
        await peer.accept()
        request = await peer.until_ended(1)
        response = frontendv2pb_pb2.QueryResultResponse().SerializeToString()
        peer.open(1, [(":status", "200"), ("content-type", "application/grpc")])
        peer.data(1, grpc_message(response))
        peer.open(1, [("grpc-status", "0")], end=True)
        received.set_result(request.messages()[0])

    server = await asyncio.start_server(frontend, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], received
    finally:
        server.close()


async def test_the_lean_client_sends_a_result_larger_than_the_frontends_64_kib_window() -> None:
    channels = LeanChannels(None)
    async with go_frontend() as (port, received):
        try:
            await channels.unary(f"127.0.0.1:{port}", QUERY_RESULT, LARGE_RESULT, (), timeout=10)
            assert await received == LARGE_RESULT
        finally:
            channels.close()


async def test_the_benchmarks_h2lite_client_sends_a_request_larger_than_a_64_kib_window() -> None:
    async with go_frontend() as (port, received):
        conn = await ClientConnection.connect(f"127.0.0.1:{port}")
        try:
            assert await asyncio.wait_for(conn.unary(QUERY_RESULT, LARGE_RESULT), 10) == b""
            assert await received == LARGE_RESULT
        finally:
            conn.close()


async def test_the_benchmarks_h2lite_frontend_enqueues_a_query_larger_than_a_door_window(
    door: GrpcFrontDoor,
) -> None:
    body = b"query=" + b"x" * (3 * STREAM_WINDOW)
    frontend = await ClientConnection.connect(f"127.0.0.1:{door.port}")
    querier = await RawPeer.connect(door.port)
    try:
        loop = frontend.open_stream(FRONTEND_LOOP)
        loop.send(init()[5:])
        loop.send(enqueue(1, body)[5:])
        replies = [await asyncio.wait_for(loop.recv(), 10) for _ in range(2)]
        assert [pb.SchedulerToFrontend.FromString(r or b"").status for r in replies] == [
            pb.OK,
            pb.OK,
        ]
        await a_querier_is_handed(querier, body)
    finally:
        frontend.close()
        querier.close()


async def test_the_lean_client_stops_reading_a_response_past_its_limit() -> None:
    async def flood(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = RawPeer(reader, writer)
        await peer.accept()
        await peer.until_ended(1)
        peer.open(1, [(":status", "200"), ("content-type", "application/grpc")])
        with contextlib.suppress(ConnectionError):
            while not writer.is_closing():  # DATA for as long as the client reads it
                peer.data(1, b"\x00" * 65_536)
                await writer.drain()

    server = await asyncio.start_server(flood, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    channels = LeanChannels(None)
    try:
        with pytest.raises(GrpcCallError) as failed:
            await channels.unary(f"127.0.0.1:{port}", QUERY_RESULT, b"", (), timeout=10)

        assert failed.value.code == 8
        assert failed.value.details == "response over 1048576 bytes"
    finally:
        channels.close()
        server.close()
