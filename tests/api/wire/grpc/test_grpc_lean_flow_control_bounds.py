"""What one connection can cost the lean door: unread bytes and SETTINGS.

A client that obeys both flow-control windows may still send on many
streams whose handlers do not read (a querier's loops waiting for work): the
door holds back its connection window once the connection holds
`UNREAD_LIMIT` unread, and gives it back as the handlers read or their calls
end. A message of the largest size, and a frontend whose loops read as
messages come, still get through. A SETTINGS frame of many INITIAL_WINDOW_SIZE
entries moves the open streams' windows in one walk, and a window that one of
its entries would carry past 2**31 - 1 still ends the connection.

The sender here obeys the windows the door grants, as grpc-go does; it waits
until the door has taken in all it sent and its WINDOW_UPDATEs have arrived
before it decides it can send no more, so no step depends on timing.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest

from api.wire.grpc.http2_frames import (
    ACK,
    CONNECTION_WINDOW,
    DEFAULT_WINDOW,
    FLOW_CONTROL_ERROR,
    RST_STREAM,
    S_INITIAL_WINDOW_SIZE,
    SETTINGS,
    STREAM_WINDOW,
    UNREAD_LIMIT,
    WINDOW_UPDATE,
    frame,
)
from api.wire.grpc.lean_server import LeanGrpcServer
from api.wire.grpc.server import MAX_MESSAGE_BYTES, GrpcFrontDoor
from scheduler_core.pb import httpgrpc_pb2
from scheduler_core.pb import schedulerpb_pb2 as pb
from tests.api.wire.grpc.raw_http2 import (
    RawPeer,
    StreamReply,
    grpc_message,
    request_headers,
    until,
)

FRONTEND_LOOP = "/schedulerpb.SchedulerForFrontend/FrontendLoop"
QUERIER_LOOP = "/schedulerpb.SchedulerForQuerier/QuerierLoop"
SETTING = struct.Struct(">HI")
FRAME = 16_384
# One gRPC message per full-size DATA frame: junk a waiting querier loop never reads.
JUNK = grpc_message(b"\x00" * (FRAME - 5))
FIRST = grpc_message(pb.QuerierToScheduler(querierID="q").SerializeToString())
INIT = grpc_message(
    pb.FrontendToScheduler(type=pb.INIT, frontendAddress="fe:1").SerializeToString()
)


def the_connection(door: GrpcFrontDoor) -> Any:
    server = door.server
    assert isinstance(server, LeanGrpcServer)
    (conn,) = server.connections
    return conn


class WindowedPeer:
    """A raw peer that sends only what the door's windows allow, as it learns
    them from the door's SETTINGS and WINDOW_UPDATE frames."""

    def __init__(self, peer: RawPeer) -> None:
        self.peer = peer
        self.connection = DEFAULT_WINDOW
        self.initial = DEFAULT_WINDOW
        self.streams: dict[int, int] = {}
        self.sent = 0
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def connect(cls, port: int) -> WindowedPeer:
        peer = cls(await RawPeer.connect(port))
        await until(lambda: peer.initial == STREAM_WINDOW and peer.connection == CONNECTION_WINDOW)
        return peer

    async def _read(self) -> None:
        while True:
            kind, flags, stream, payload = await self.peer.read_frame()
            if kind == WINDOW_UPDATE:
                increment = int.from_bytes(payload, "big")
                if not stream:
                    self.connection += increment
                elif stream in self.streams:
                    self.streams[stream] += increment
            elif kind == SETTINGS and not flags & ACK:
                for i in range(0, len(payload), 6):
                    key, value = SETTING.unpack_from(payload, i)
                    if key == S_INITIAL_WINDOW_SIZE:
                        for sid in self.streams:
                            self.streams[sid] += value - self.initial
                        self.initial = value

    def open(self, stream: int, path: str) -> None:
        self.streams[stream] = self.initial
        self.peer.open(stream, request_headers(path))

    def send(self, stream: int, data: bytes) -> bytes:
        """Send what the windows allow of `data` in whole frames; the rest back."""
        while data:
            size = min(len(data), FRAME)
            if size > min(self.connection, self.streams[stream]):
                break
            self.peer.data(stream, data[:size])
            self.connection -= size
            self.streams[stream] -= size
            self.sent += size
            data = data[size:]
        return data

    async def settled(self, conn: Any) -> None:
        """Until the door has taken in everything sent and its grants have arrived."""
        await self.peer.writer.drain()
        await until(
            lambda: (
                conn._recv_window == self.connection
                and all(
                    conn.streams[sid].recv_window == window
                    for sid, window in self.streams.items()
                    if sid in conn.streams
                )
            ),
            timeout=30,
        )

    async def replies(self, stream: int, count: int) -> StreamReply:
        """Until `count` whole messages came back on `stream` (read by `_read`)."""
        reply = self.peer.reply(stream)
        await until(lambda: len(reply.messages()) >= count, timeout=30)
        return reply

    async def close(self) -> None:
        self._reader.cancel()
        await asyncio.gather(self._reader, return_exceptions=True)
        self.peer.close()


async def test_the_door_holds_a_bounded_amount_unread_however_many_idle_streams_send(
    door: GrpcFrontDoor,
) -> None:
    client = await WindowedPeer.connect(door.port)
    streams = [1 + 2 * i for i in range(48)]  # each could hold 2 MiB: 96 MiB unbounded
    try:
        for sid in streams:
            client.open(sid, QUERIER_LOOP)
            assert client.send(sid, FIRST) == b""
        conn = the_connection(door)
        await client.settled(conn)
        await until(lambda: door.runtime.snapshot().queriers)  # the loops wait for work
        first_bytes = client.sent
        while True:
            progressed = False
            for sid in streams:  # a frame each in turn, as grpc-go shares a connection
                if client.send(sid, JUNK) == b"":
                    progressed = True
            await client.settled(conn)
            if not progressed:
                break

        junk = client.sent - first_bytes
        assert UNREAD_LIMIT < junk <= UNREAD_LIMIT + CONNECTION_WINDOW
        assert conn._unread_total == junk  # none of it read, all of it counted
        assert client.connection < FRAME  # the connection's window, not the streams', shut

        # Calls that end give back what they held: the window opens again.
        for sid in streams[:24]:
            client.peer.send(frame(RST_STREAM, 0, sid, (8).to_bytes(4, "big")))
        await until(lambda: client.connection >= CONNECTION_WINDOW // 2)
        assert conn._unread_total < junk
    finally:
        await client.close()


def enqueue(query_id: int, size: int) -> bytes:
    """An ENQUEUE whose message is exactly `size` bytes."""

    def message(body: int) -> bytes:
        request = httpgrpc_pb2.HTTPRequest(method="POST", url="/api/v1/query", body=b"x" * body)
        return pb.FrontendToScheduler(
            type=pb.ENQUEUE, queryID=query_id, userID="t", httpRequest=request
        ).SerializeToString()

    body = size - len(message(0))
    while len(message(body)) != size:  # the body's length prefix grows with it
        body -= len(message(body)) - size
    return grpc_message(message(body))


async def send_all(client: WindowedPeer, conn: Any, pending: dict[int, bytes]) -> None:
    """Send every stream's bytes as the windows open; fails if they stop opening."""
    while any(pending.values()):
        before = client.sent
        for sid, data in pending.items():
            pending[sid] = client.send(sid, data)
        await client.settled(conn)
        assert client.sent > before or not any(pending.values()), "the door stopped granting"


async def test_a_message_of_the_largest_size_arrives_while_other_streams_hold_unread_ones(
    door: GrpcFrontDoor,
) -> None:
    client = await WindowedPeer.connect(door.port)
    idle = [1 + 2 * i for i in range(8)]
    try:
        for sid in idle:
            client.open(sid, QUERIER_LOOP)
            assert client.send(sid, FIRST + JUNK * 4) == b""  # 64 KiB each, never read
        conn = the_connection(door)
        await client.settled(conn)
        client.open(17, FRONTEND_LOOP)
        assert client.send(17, INIT) == b""

        await send_all(client, conn, {17: enqueue(1, MAX_MESSAGE_BYTES)})

        reply = await client.replies(17, 2)
        statuses = [pb.SchedulerToFrontend.FromString(m).status for m in reply.messages()]
        assert statuses == [pb.OK, pb.OK]  # the ENQUEUE arrived whole and was read
    finally:
        await client.close()


async def test_a_frontend_whose_loops_read_as_messages_come_is_never_held_back(
    door: GrpcFrontDoor,
) -> None:
    client = await WindowedPeer.connect(door.port)
    loops = [1 + 2 * i for i in range(16)]
    body = 256 * 1024
    rounds = 12  # 16 loops x 12 x 256 KiB = 48 MiB: more than the door ever holds unread
    try:
        for sid in loops:
            client.open(sid, FRONTEND_LOOP)
        conn = the_connection(door)
        pending = {
            sid: INIT
            + b"".join(
                enqueue(sid * 100 + n, body)
                + grpc_message(
                    pb.FrontendToScheduler(
                        type=pb.CANCEL, queryID=sid * 100 + n
                    ).SerializeToString()
                )
                for n in range(rounds)
            )
            for sid in loops
        }
        assert client.send(loops[0], b"") == b""

        await send_all(client, conn, pending)

        assert client.sent > UNREAD_LIMIT + CONNECTION_WINDOW
        for sid in loops:
            reply = await client.replies(sid, 1 + 2 * rounds)
            assert {pb.SchedulerToFrontend.FromString(m).status for m in reply.messages()} == {
                pb.OK
            }
        assert conn._unread_total == 0
    finally:
        await client.close()


class CountingStreams(dict[int, Any]):
    """The connection's streams, counting the walks over them."""

    walks = 0

    def values(self) -> Any:
        self.walks += 1
        return super().values()


async def test_a_settings_frame_of_many_initial_window_entries_walks_the_streams_once(
    door: GrpcFrontDoor,
) -> None:
    peer = await RawPeer.connect(door.port)
    try:
        for i in range(64):
            peer.open(1 + 2 * i, request_headers(FRONTEND_LOOP))
        await peer.writer.drain()
        await until(lambda: len(door.server.connections) == 1)  # type: ignore[union-attr]
        conn = the_connection(door)
        await until(lambda: len(conn.streams) == 64)
        conn.streams = counting = CountingStreams(conn.streams)
        # 2,730 entries (a 16 KiB frame) alternating, ending one above the default.
        entries = b"".join(SETTING.pack(S_INITIAL_WINDOW_SIZE, 65_535 + k % 2) for k in range(2730))

        peer.send(frame(SETTINGS, 0, 0, entries))

        async def acked() -> None:
            while True:
                kind, flags, _, _ = await peer.read_frame()
                if kind == SETTINGS and flags & ACK:
                    return

        await asyncio.wait_for(acked(), 10)
        assert counting.walks == 1
        assert {stream.send_window for stream in conn.streams.values()} == {65_536}
        assert peer.goaway is None
    finally:
        peer.close()


@pytest.mark.parametrize(
    "values",
    [(65_536, 65_535), (65_536, 1, 65_535), (1, 65_536, 100)],
    ids=["up-and-back", "up-down-back", "down-up-down"],
)
async def test_an_initial_window_that_overflows_only_at_an_earlier_entry_ends_the_connection(
    door: GrpcFrontDoor, values: tuple[int, ...]
) -> None:
    peer = await RawPeer.connect(door.port)
    try:
        peer.open(1, request_headers(FRONTEND_LOOP))
        # Stream 1's window at 2**31 - 1: any entry above 65,535 carries it past.
        peer.send(frame(WINDOW_UPDATE, 0, 1, (2**31 - 1 - 65_535).to_bytes(4, "big")))
        entries = b"".join(SETTING.pack(S_INITIAL_WINDOW_SIZE, value) for value in values)

        peer.send(frame(SETTINGS, 0, 0, entries))
        await peer.until_closed()

        assert peer.goaway == (FLOW_CONTROL_ERROR, b"initial window overflow")
    finally:
        peer.close()
