"""One HTTP/2 connection of `h2lite`: frames, settings, pings, both windows, its streams.

`Connection` is the asyncio Protocol both ends share: it splits the bytes
into frames, answers PINGs and SETTINGS, reassembles CONTINUATION and
decodes header blocks with `hpack`. It sends with the lean door's own
sending half (`http2_send.Http2Sending`, which its lean client shares): DATA
goes as far as the peer's connection and stream windows allow, even part of
a message (grpc-go opens 64 KiB windows and widens them only as DATA
arrives, so a larger message must go in pieces or it never goes), the rest
waits for WINDOW_UPDATE in order per stream, trailers behind it, and a
stream whose window stays shut holds back only its own frames. `Stream` is
one call on it, carrying gRPC's length-prefixed messages (`grpc_message`).
The client and the server are in `h2lite`.
"""

from __future__ import annotations

import asyncio
import struct
from collections import deque
from typing import cast

import hpack

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
    PRIORITY_FLAG,
    RST_STREAM,
    S_INITIAL_WINDOW_SIZE,
    S_MAX_FRAME_SIZE,
    SETTING,
    SETTINGS,
    WINDOW_UPDATE,
    Http2Stream,
    frame,
)
from api.wire.grpc.http2_send import Http2Sending, Pending

__all__ = ["Connection", "GrpcCallError", "Stream", "StreamReset", "grpc_message"]

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


class Stream(Http2Stream):
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
        "trailers",
        "unacked",
    )

    def __init__(self, conn: Connection, stream_id: int, send_window: int) -> None:
        super().__init__(stream_id, send_window)
        self._conn = conn
        self.unacked = 0
        self.headers: dict[str, str] = {}
        self.trailers: dict[str, str] = {}
        self._buffer = bytearray()
        self._messages: deque[bytes] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self.ended = False
        self.closed: BaseException | None = None

    def send(self, payload: bytes, *, end: bool = False) -> None:
        self._conn.send_data(self, grpc_message(payload), end=end)

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


class Connection(Http2Sending, asyncio.Protocol):
    """Frames, settings, pings and both flow-control windows of one connection."""

    streams: dict[int, Stream]  # type: ignore[assignment]  # Http2Stream's, with messages

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.streams = {}
        self._decoder = hpack.Decoder()
        self._inbox = bytearray()
        self._peer_initial_window = 65_535
        self._peer_max_frame = 16_384
        self._send_window = 65_535
        self._received = 0
        self._partial: tuple[int, int, bytearray] | None = None  # HEADERS awaiting CONTINUATION
        self.lost = asyncio.Event()
        # The sending half's state (`Http2Sending`): frames waiting on a
        # window; `write` below sends at once instead of batching.
        self._blocked: deque[Pending] = deque()
        self._closed = False

    # -- asyncio.Protocol ------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses.
        self.transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        for stream in list(self.streams.values()):
            stream._close(StreamReset("connection lost"))
        self.streams.clear()
        for pending in self._blocked:
            pending.settle(ConnectionResetError("connection lost"))
        self._blocked.clear()
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

    def send_data(
        self, stream: Http2Stream, data: bytes, end: bool = False, trailers: bytes = b""
    ) -> bool:
        """DATA as far as both windows allow, the rest when they open (False
        then); `trailers`, if given, follow it whenever it goes and end the stream."""
        sent = super().send_data(stream, data, end=end and not trailers)
        if trailers:
            self.send_headers(stream, trailers, end=True)
        return sent

    def _local_end(self, stream: Http2Stream) -> None:
        # Our side is done; the stream is forgotten once the peer's is too.
        stream.local_closed = True
        if isinstance(stream, Stream) and stream.ended:
            self.streams.pop(stream.id, None)

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
