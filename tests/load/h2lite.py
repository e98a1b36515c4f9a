"""Just enough HTTP/2 to speak gRPC from the benchmark, without grpcio.

The benchmark's clients stand in for Cortex's Go query-frontends and
queriers, which spend a few tens of microseconds per request; `grpc.aio`
clients spend over 500, so on a 2-core machine they, not the scheduler, set
the gRPC figure. This module is the wire only: frames, flow control,
headers and gRPC's length-prefixed messages, on an asyncio Protocol.

Both directions keep to RFC 9113: the peer's SETTINGS and windows are
honoured (DATA waits for WINDOW_UPDATE when a window is spent), PINGs are
answered, CONTINUATION is reassembled. Header blocks are decoded with the
`hpack` package (grpcio's encoder uses the dynamic table and Huffman codes)
and encoded as literals that are never indexed, so our encoder keeps no
state the peer could disagree with.
"""

from __future__ import annotations

import asyncio
import struct
from collections import deque
from collections.abc import Awaitable, Callable

import hpack

# The wire basics are the lean door's own (one definition of RFC 9113's numbers).
from api.wire.grpc.http2_frames import (
    ACK,
    CONTINUATION,
    DATA,
    END_HEADERS,
    END_STREAM,
    FRAME_HEADER,
    GOAWAY,
    HEADERS,
    MAX_WINDOW,
    PADDED,
    PING,
    PREFACE,
    PRIORITY_FLAG,
    RST_STREAM,
    S_INITIAL_WINDOW_SIZE,
    S_MAX_FRAME_SIZE,
    SETTING,
    SETTINGS,
    WINDOW_UPDATE,
    encode_headers,
    frame,
)

__all__ = [
    "ACK",
    "CONTINUATION",
    "DATA",
    "END_HEADERS",
    "END_STREAM",
    "HEADERS",
    "PING",
    "RST_STREAM",
    "SETTINGS",
    "S_INITIAL_WINDOW_SIZE",
    "WINDOW_UPDATE",
    "ClientConnection",
    "GrpcCallError",
    "ServerConnection",
    "Stream",
    "StreamReset",
    "encode_headers",
    "frame",
    "grpc_message",
]

# Ask for a window update once this much of a receive window is used: far
# from exhausting it, so the peer never stalls on us.
_REFILL = 1 << 24
_OUR_SETTINGS = SETTING.pack(S_INITIAL_WINDOW_SIZE, MAX_WINDOW) + SETTING.pack(0x2, 0)


class GrpcCallError(Exception):
    """The call ended with a non-zero grpc-status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"grpc-status {status}: {message}")
        self.status = status


class StreamReset(Exception):
    """The peer reset the stream, or the connection went away under it."""


def grpc_message(payload: bytes) -> bytes:
    """gRPC's length-prefixed message: uncompressed flag, length, bytes."""
    return b"\x00" + len(payload).to_bytes(4, "big") + payload


class Stream:
    """One HTTP/2 stream carrying gRPC messages in both directions.

    `recv()` returns the next message, or None once the peer ended the
    stream with grpc-status 0; any other status raises GrpcCallError.
    """

    __slots__ = (
        "_buffer",
        "_conn",
        "_messages",
        "_waiter",
        "closed",
        "ended",
        "headers",
        "id",
        "send_window",
        "trailers",
        "unacked",
    )

    def __init__(self, conn: _Connection, stream_id: int, send_window: int) -> None:
        self._conn = conn
        self.id = stream_id
        self.send_window = send_window
        self.unacked = 0
        self.headers: dict[str, str] = {}
        self.trailers: dict[str, str] = {}
        self._buffer = bytearray()
        self._messages: deque[bytes] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self.ended = False
        self.closed: BaseException | None = None

    def send(self, payload: bytes, *, end: bool = False) -> None:
        self._conn.send_data(self, grpc_message(payload), end)

    async def recv(self) -> bytes | None:
        while not self._messages:
            if self.closed is not None:
                raise self.closed
            if self.ended:
                self._raise_for_status()
                return None
            self._waiter = self._conn.loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._messages.popleft()

    def _raise_for_status(self) -> None:
        fields = self.trailers or self.headers
        status = int(fields.get("grpc-status", "2"))
        if status:
            raise GrpcCallError(status, fields.get("grpc-message", ""))

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _data(self, chunk: bytes) -> None:
        buf = self._buffer
        buf += chunk
        while len(buf) >= 5:
            size = int.from_bytes(buf[1:5], "big")
            if len(buf) < 5 + size:
                break
            self._messages.append(bytes(buf[5 : 5 + size]))
            del buf[: 5 + size]
        self._wake()

    def _header_block(self, fields: dict[str, str]) -> None:
        if self.headers:
            self.trailers = fields
        else:
            self.headers = fields

    def _close(self, error: BaseException | None) -> None:
        if error is None:
            self.ended = True
        else:
            self.closed = error
        self._wake()


class _Connection(asyncio.Protocol):
    """Frames, settings, pings and both flow-control windows of one connection."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.streams: dict[int, Stream] = {}
        self._decoder = hpack.Decoder()
        self._inbox = bytearray()
        self._peer_initial_window = 65_535
        self._peer_max_frame = 16_384
        self._send_window = 65_535
        self._received = 0
        self._blocked: deque[tuple[Stream, bytes, bool, bytes]] = deque()
        self._partial: tuple[int, int, bytearray] | None = None  # HEADERS awaiting CONTINUATION
        self.lost = asyncio.Event()

    # -- asyncio.Protocol ------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        for stream in list(self.streams.values()):
            stream._close(StreamReset("connection lost"))
        self.streams.clear()
        self.lost.set()

    def data_received(self, data: bytes) -> None:
        inbox = self._inbox
        inbox += data
        offset = 0
        while len(inbox) - offset >= 9:
            word, flags, stream_id = FRAME_HEADER.unpack_from(inbox, offset)
            length = word >> 8
            if len(inbox) - offset - 9 < length:
                break
            payload = bytes(inbox[offset + 9 : offset + 9 + length])
            offset += 9 + length
            self._frame(word & 0xFF, flags, stream_id & MAX_WINDOW, payload)
        del inbox[:offset]

    # -- sending ---------------------------------------------------------------

    def write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def send_headers(self, stream: Stream, block: bytes, *, end: bool = False) -> None:
        flags = END_HEADERS | (END_STREAM if end else 0)
        self.write(frame(HEADERS, flags, stream.id, block))

    def send_data(self, stream: Stream, data: bytes, end: bool, trailers: bytes = b"") -> None:
        """DATA now if both windows allow, else queued behind earlier DATA.

        Trailers, if given, follow the data (and end the stream) whenever it goes.
        """
        if self._blocked or len(data) > min(self._send_window, stream.send_window):
            self._blocked.append((stream, data, end, trailers))
            self._flush_blocked()
            return
        self._send_now(stream, data, end, trailers)

    def _send_now(self, stream: Stream, data: bytes, end: bool, trailers: bytes) -> None:
        self._send_window -= len(data)
        stream.send_window -= len(data)
        step = self._peer_max_frame
        if len(data) <= step:
            self.write(frame(DATA, END_STREAM if end else 0, stream.id, data))
        else:
            chunks = [data[i : i + step] for i in range(0, len(data), step)]
            for i, chunk in enumerate(chunks):
                last = end and i == len(chunks) - 1
                self.write(frame(DATA, END_STREAM if last else 0, stream.id, chunk))
        if trailers:
            self.send_headers(stream, trailers, end=True)
            self.streams.pop(stream.id, None)

    def _flush_blocked(self) -> None:
        # In order across streams: a later small message must not overtake an
        # earlier large one on the same stream.
        while self._blocked:
            stream, data, end, trailers = self._blocked[0]
            if stream.closed is not None:
                self._blocked.popleft()
                continue
            if len(data) > min(self._send_window, stream.send_window):
                return
            self._blocked.popleft()
            self._send_now(stream, data, end, trailers)

    def _forget(self, stream: Stream, error: BaseException | None) -> None:
        self.streams.pop(stream.id, None)
        stream._close(error)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    # -- receiving -------------------------------------------------------------

    def _frame(self, kind: int, flags: int, stream_id: int, payload: bytes) -> None:
        if kind == DATA:
            self._on_data(flags, stream_id, payload)
        elif kind in (HEADERS, CONTINUATION):
            self._on_headers(kind, flags, stream_id, payload)
        elif kind == SETTINGS:
            self._on_settings(flags, payload)
        elif kind == PING and not flags & ACK:
            self.write(frame(PING, ACK, 0, payload))
        elif kind == WINDOW_UPDATE:
            self._on_window_update(stream_id, payload)
        elif kind == RST_STREAM:
            stream = self.streams.get(stream_id)
            if stream is not None:
                code = int.from_bytes(payload[:4], "big")
                self._forget(stream, StreamReset(f"reset by peer (code {code})"))
        elif kind == GOAWAY:
            last = int.from_bytes(payload[:4], "big") & MAX_WINDOW
            for sid in [s for s in self.streams if s > last]:
                self._forget(self.streams[sid], StreamReset("connection going away"))

    def _on_data(self, flags: int, stream_id: int, payload: bytes) -> None:
        size = len(payload)
        if flags & PADDED:
            payload = payload[1 : len(payload) - payload[0]]
        self._received += size
        if self._received >= _REFILL:
            self.write(frame(WINDOW_UPDATE, 0, 0, self._received.to_bytes(4, "big")))
            self._received = 0
        stream = self.streams.get(stream_id)
        if stream is None:
            return
        stream.unacked += size
        if stream.unacked >= _REFILL:
            self.write(frame(WINDOW_UPDATE, 0, stream_id, stream.unacked.to_bytes(4, "big")))
            stream.unacked = 0
        if payload:
            stream._data(payload)
        if flags & END_STREAM:
            self._end_of_stream(stream)

    def _on_headers(self, kind: int, flags: int, stream_id: int, payload: bytes) -> None:
        if kind == HEADERS:
            if flags & PADDED:
                payload = payload[1 : len(payload) - payload[0]]
            if flags & PRIORITY_FLAG:
                payload = payload[5:]
            self._partial = (stream_id, flags, bytearray(payload))
        elif self._partial is not None:
            self._partial[2].extend(payload)
        if not flags & END_HEADERS or self._partial is None:
            return
        stream_id, first_flags, block = self._partial
        self._partial = None
        fields = {str(k): str(v) for k, v in self._decoder.decode(bytes(block))}
        self.header_block(stream_id, fields, bool(first_flags & END_STREAM))

    def header_block(self, stream_id: int, fields: dict[str, str], end: bool) -> None:
        stream = self.streams.get(stream_id)
        if stream is None:
            return
        stream._header_block(fields)
        if end:
            self._end_of_stream(stream)

    def _end_of_stream(self, stream: Stream) -> None:
        self._forget(stream, None)

    def _on_settings(self, flags: int, payload: bytes) -> None:
        if flags & ACK:
            return
        for i in range(0, len(payload) - 5, 6):
            key, value = struct.unpack_from(">HI", payload, i)
            if key == S_INITIAL_WINDOW_SIZE:
                delta = value - self._peer_initial_window
                self._peer_initial_window = value
                for stream in self.streams.values():
                    stream.send_window += delta
            elif key == S_MAX_FRAME_SIZE:
                self._peer_max_frame = value
        self.write(frame(SETTINGS, ACK, 0))
        self._flush_blocked()

    def _on_window_update(self, stream_id: int, payload: bytes) -> None:
        increment = int.from_bytes(payload[:4], "big") & MAX_WINDOW
        if stream_id == 0:
            self._send_window += increment
        elif (stream := self.streams.get(stream_id)) is not None:
            stream.send_window += increment
        self._flush_blocked()

    def open_settings(self) -> bytes:
        """Our SETTINGS plus a connection window as large as the protocol allows."""
        grow = (MAX_WINDOW - 65_535).to_bytes(4, "big")
        return frame(SETTINGS, 0, 0, _OUR_SETTINGS) + frame(WINDOW_UPDATE, 0, 0, grow)


class ClientConnection(_Connection):
    """A client's connection: opens streams with odd ids."""

    def __init__(self, authority: str) -> None:
        super().__init__()
        self.authority = authority
        self._next_id = 1
        self._blocks: dict[tuple[str, tuple[tuple[str, str], ...]], bytes] = {}

    @classmethod
    async def connect(cls, address: str) -> ClientConnection:
        host, _, port = address.rpartition(":")
        loop = asyncio.get_running_loop()
        _, conn = await loop.create_connection(lambda: cls(address), host, int(port))
        conn.write(PREFACE + conn.open_settings())
        return conn

    def open_stream(self, path: str, metadata: tuple[tuple[str, str], ...] = ()) -> Stream:
        """Start a call; its request headers are sent at once."""
        key = (path, metadata)
        block = self._blocks.get(key)
        if block is None:
            block = self._blocks[key] = encode_headers(
                [
                    (":method", "POST"),
                    (":scheme", "http"),
                    (":path", path),
                    (":authority", self.authority),
                    ("content-type", "application/grpc"),
                    ("te", "trailers"),
                    *metadata,
                ]
            )
        stream = Stream(self, self._next_id, self._peer_initial_window)
        self._next_id += 2
        self.streams[stream.id] = stream
        self.send_headers(stream, block)
        return stream

    async def unary(
        self, path: str, request: bytes, metadata: tuple[tuple[str, str], ...] = ()
    ) -> bytes:
        """One request, one response; raises GrpcCallError on a non-zero status."""
        stream = self.open_stream(path, metadata)
        stream.send(request, end=True)
        response = await stream.recv()
        if response is None:
            raise GrpcCallError(13, "no response message")
        await stream.recv()
        return response


Handler = Callable[[str, dict[str, str], bytes], Awaitable[bytes]]

_RESPONSE_HEADERS = encode_headers([(":status", "200"), ("content-type", "application/grpc")])
_OK_TRAILERS = encode_headers([("grpc-status", "0")])


class ServerConnection(_Connection):
    """A server's connection for unary methods: `handler(path, headers, request)`.

    The handler's exception ends that call with UNKNOWN; the connection and
    its other calls go on.
    """

    def __init__(self, handler: Handler) -> None:
        super().__init__()
        self._handler = handler
        self._preface_seen = False
        self._tasks: set[asyncio.Task[None]] = set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.write(self.open_settings())

    def data_received(self, data: bytes) -> None:
        if not self._preface_seen:
            self._inbox += data
            if len(self._inbox) < len(PREFACE):
                return
            if bytes(self._inbox[: len(PREFACE)]) != PREFACE:
                self.close()
                return
            self._preface_seen = True
            data = bytes(self._inbox[len(PREFACE) :])
            self._inbox.clear()
        super().data_received(data)

    def header_block(self, stream_id: int, fields: dict[str, str], end: bool) -> None:
        if stream_id not in self.streams:
            self.streams[stream_id] = Stream(self, stream_id, self._peer_initial_window)
        super().header_block(stream_id, fields, end)

    def _end_of_stream(self, stream: Stream) -> None:
        # The request is complete; the stream stays open for our response.
        stream.ended = True
        task = self.loop.create_task(self._answer(stream))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(self, stream: Stream) -> None:
        request = stream._messages.popleft() if stream._messages else b""
        try:
            response = await self._handler(stream.headers.get(":path", ""), stream.headers, request)
        except Exception as exc:  # noqa: BLE001 - reported to the caller as UNKNOWN
            trailers = [(":status", "200"), ("content-type", "application/grpc")]
            trailers += [("grpc-status", "2"), ("grpc-message", str(exc)[:200])]
            self.send_headers(stream, encode_headers(trailers), end=True)
            self.streams.pop(stream.id, None)
        else:
            self.send_headers(stream, _RESPONSE_HEADERS)
            self.send_data(stream, grpc_message(response), False, _OK_TRAILERS)
