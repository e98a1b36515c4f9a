"""The HTTP/2 connection under the lean gRPC door: frames, settings, windows.

An asyncio Protocol on the scheduler's own loop, so a message goes from the
socket to the servicer with no thread in between (grpcio reads on its
event-engine threads, completes on its poller thread, then resumes the loop:
three wake-ups per message). Only what a gRPC server needs of RFC 9113:

- frames are parsed here with `struct`; header blocks are decoded with the
  `hpack` package (grpc-go and grpcio clients use the dynamic table and
  Huffman codes) and encoded as literals that are never indexed, so our
  encoder keeps no state the peer could disagree with;
- flow control both ways: DATA waits for the peer's WINDOW_UPDATE when a
  window is spent; our receive windows are re-opened when the layer above
  says so (`consumed`: as bytes arrive, but only while less than a window
  of messages waits unread), so a peer that sends faster than we read is
  held back;
- PING is answered; like grpcio with the door's former options, more than
  two pings within 5 s with nothing sent in between (a flood, not grpc-go's
  20 s keepalive or its BDP pings) get GOAWAY ENHANCE_YOUR_CALM;
- GOAWAY either way: a peer's ends new streams on this connection, ours
  (`goaway`) lets open streams finish, as `stop(grace)` needs;
- protocol errors end the connection with GOAWAY and the RFC's code, and so
  does a client silent for `PREFACE_TIMEOUT` after it connects; one long
  without a stream gets GOAWAY NO_ERROR (`max_connection_idle`, `http2_idle.py`).

We checked the `h2` package for this layer: on this machine it spent about
38 us to take in one DATA frame and 19 us to send one, against 1-3 us
here, and a query crosses four DATA frames (docs/performance.md).

This module reads the socket, parses and dispatches frames, takes in DATA
and header blocks and keeps the streams; the sending half is in
`http2_send.py`, the control frames (SETTINGS, PING, WINDOW_UPDATE,
RST_STREAM, our GOAWAY) in `http2_control.py`, the idle limit in
`http2_idle.py`, the wire constants in `http2_frames.py`.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import cast

import hpack

from api.wire.grpc.http2_control import Http2Control
from api.wire.grpc.http2_frames import (
    CANCEL,
    COMPRESSION_ERROR,
    CONNECTION_WINDOW,
    CONTINUATION,
    DATA,
    DEFAULT_FRAME,
    DEFAULT_WINDOW,
    END_HEADERS,
    END_STREAM,
    ENHANCE_YOUR_CALM,
    FLOW_CONTROL_ERROR,
    FRAME_HEADER,
    FRAME_SIZE_ERROR,
    GOAWAY,
    HEADERS,
    MAX_CONCURRENT_STREAMS,
    MAX_HEADER_LIST,
    MAX_WINDOW,
    OUR_SETTINGS,
    PADDED,
    PING,
    PING_INTERVAL,
    PREFACE,
    PREFACE_TIMEOUT,
    PRIORITY,
    PRIORITY_FLAG,
    PROTOCOL_ERROR,
    PUSH_PROMISE,
    REFUSED_STREAM,
    RST_STREAM,
    SETTINGS,
    WINDOW_UPDATE,
    Http2Stream,
    ProtocolError,
    frame,
    request_header_problem,
)
from api.wire.grpc.http2_idle import Http2Idle
from api.wire.grpc.http2_send import Http2Sending, Pending

__all__ = ["Http2Connection"]


class Http2Connection(Http2Control, Http2Sending, Http2Idle, asyncio.Protocol):
    """A server connection; subclasses handle streams.

    Hooks: `stream_opened(stream, headers, end)`, `stream_data(stream,
    payload, end)` and `stream_reset(stream, code)` (also called for every
    open stream when the connection is lost, with CANCEL).
    """

    def __init__(
        self, *, batch_writes: int = 1, max_connection_idle: float = 0.0, client: bool = False
    ) -> None:
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.streams: dict[int, Http2Stream] = {}
        self._decoder = hpack.Decoder()
        self._decoder.max_header_list_size = MAX_HEADER_LIST
        self._inbox = bytearray()
        # A client sends the preface; a server waits for it.
        self._client = client
        self._preface_seen = client
        self._peer_initial_window = DEFAULT_WINDOW
        self._peer_max_frame = DEFAULT_FRAME
        self._send_window = DEFAULT_WINDOW
        self._recv_window = CONNECTION_WINDOW
        self._recv_unacked = 0
        # Bytes the layer above holds for its application, not yet read
        # (`unread_grew`): past UNREAD_LIMIT the connection's window stays shut.
        self._unread_total = 0
        self._blocked: deque[Pending] = deque()
        self._partial: tuple[int, int, bytearray] | None = None
        self._last_stream_id = 0
        self._going_away = False
        self._closed = False
        # Loop turns a write waits to share a socket write (0: none).
        self._batch = int(batch_writes)
        self._out: list[bytes] = []
        self._flush_handle: asyncio.Handle | None = None
        self._last_ping = -PING_INTERVAL
        self._ping_strikes = 0
        self._preface_timer: asyncio.TimerHandle | None = None
        # Seconds with no stream before GOAWAY, 0: never (`http2_idle.py`).
        self._max_idle = float(max_connection_idle)
        self._idle_since: float | None = None
        self._idle_timer: asyncio.TimerHandle | None = None
        self.on_close: Callable[[Http2Connection], None] | None = None

    # -- asyncio.Protocol ------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses.
        self.transport = cast(asyncio.Transport, transport)
        grow = (CONNECTION_WINDOW - DEFAULT_WINDOW).to_bytes(4, "big")
        opening = frame(SETTINGS, 0, 0, OUR_SETTINGS) + frame(WINDOW_UPDATE, 0, 0, grow)
        self.write(PREFACE + opening if self._client else opening)
        if not self._client:
            self._preface_timer = self.loop.call_later(PREFACE_TIMEOUT, self._no_preface)

    def _no_preface(self) -> None:
        reason = f"no HTTP/2 connection preface within {PREFACE_TIMEOUT:g} s"
        self._fail(ProtocolError(PROTOCOL_ERROR, reason))

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if self._preface_timer is not None:
            self._preface_timer.cancel()
        self._idle_stop()
        for stream in list(self.streams.values()):
            self._drop(stream, CANCEL)
        for pending in self._blocked:
            pending.settle(ConnectionResetError("connection lost"))
        self._blocked.clear()
        if self.on_close is not None:
            self.on_close(self)

    def pause_writing(self) -> None:
        # A peer that does not read gets nothing more read from it either, so
        # what we owe it (replies, PING acks) cannot pile up without bound.
        if self.transport is not None:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.transport is not None and not self._closed:
            self.transport.resume_reading()

    def data_received(self, data: bytes) -> None:
        inbox = self._inbox
        inbox += data
        if not self._preface_seen:
            if len(inbox) < len(PREFACE):
                if PREFACE.startswith(bytes(inbox)):
                    return
                self._fail(ProtocolError(PROTOCOL_ERROR, "not an HTTP/2 connection preface"))
                return
            if inbox[: len(PREFACE)] != PREFACE:
                self._fail(ProtocolError(PROTOCOL_ERROR, "not an HTTP/2 connection preface"))
                return
            del inbox[: len(PREFACE)]
            self._preface_seen = True
            if self._preface_timer is not None:
                self._preface_timer.cancel()
            self._idle_start()
        offset, size = 0, len(inbox)
        try:
            while size - offset >= 9 and not self._closed:
                word, flags, stream_id = FRAME_HEADER.unpack_from(inbox, offset)
                length = word >> 8
                if length > DEFAULT_FRAME:
                    raise ProtocolError(FRAME_SIZE_ERROR, f"frame of {length} bytes")
                end = offset + 9 + length
                if end > size:
                    break
                payload = bytes(inbox[offset + 9 : end])
                offset = end
                self._frame(word & 0xFF, flags, stream_id & MAX_WINDOW, payload)
        except ProtocolError as exc:
            self._fail(exc)
            return
        del inbox[:offset]

    # -- our side --------------------------------------------------------------

    def close(self) -> None:
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush()
        if self.transport is not None:
            self.transport.close()

    def _fail(self, exc: ProtocolError) -> None:
        self.goaway(exc.code, str(exc).encode()[:256])
        self.close()
        self._closed = True

    # -- receiving -------------------------------------------------------------

    def _frame(self, kind: int, flags: int, stream_id: int, payload: bytes) -> None:
        if self._partial is not None and kind != CONTINUATION:
            raise ProtocolError(PROTOCOL_ERROR, "expected CONTINUATION")
        if kind == DATA:
            self._on_data(flags, stream_id, payload)
        elif kind in (HEADERS, CONTINUATION):
            self._on_headers(kind, flags, stream_id, payload)
        elif kind == WINDOW_UPDATE:
            self._on_window_update(stream_id, payload)
        elif kind == PING:
            self._on_ping(flags, stream_id, payload)
        elif kind == SETTINGS:
            self._on_settings(flags, stream_id, payload)
        elif kind == RST_STREAM:
            self._on_rst(stream_id, payload)
        elif kind == GOAWAY:
            if stream_id:
                raise ProtocolError(PROTOCOL_ERROR, "GOAWAY on a stream")
            self._going_away = True
            self._maybe_close()
        elif kind == PUSH_PROMISE:
            raise ProtocolError(PROTOCOL_ERROR, "PUSH_PROMISE from a client")
        elif kind == PRIORITY and (not stream_id or len(payload) != 5):
            raise ProtocolError(PROTOCOL_ERROR, "malformed PRIORITY")
        # Other types (and PRIORITY) are ignored, as RFC 9113 asks.

    def _on_data(self, flags: int, stream_id: int, payload: bytes) -> None:
        if not stream_id:
            raise ProtocolError(PROTOCOL_ERROR, "DATA on stream 0")
        size = len(payload)
        self._recv_window -= size
        if self._recv_window < 0:
            raise ProtocolError(FLOW_CONTROL_ERROR, "connection window exceeded")
        if flags & PADDED:
            if not payload or payload[0] >= size:
                raise ProtocolError(PROTOCOL_ERROR, "bad padding")
            padding = payload[0] + 1
            payload = payload[1 : size - payload[0]]
        else:
            padding = 0
        stream = self.streams.get(stream_id)
        if stream is None or stream.remote_closed:
            # Closed or reset by us: count it against the connection only.
            if stream_id > self._last_stream_id:
                raise ProtocolError(PROTOCOL_ERROR, "DATA on an idle stream")
            self.give_back(size)
            return
        stream.recv_window -= size
        if stream.recv_window < 0:
            self.give_back(size)  # the connection's window is not the stream's fault
            self.reset(stream, FLOW_CONTROL_ERROR)
            self.stream_reset(stream, FLOW_CONTROL_ERROR)
            return
        if padding:
            self.consumed(stream, padding)
        end = bool(flags & END_STREAM)
        if end:
            stream.remote_closed = True
        self.stream_data(stream, payload, end)
        if end and stream.local_closed:
            self.streams.pop(stream_id, None)
            self._maybe_close()

    def _on_headers(self, kind: int, flags: int, stream_id: int, payload: bytes) -> None:
        if kind == HEADERS:
            if not stream_id:
                raise ProtocolError(PROTOCOL_ERROR, "HEADERS on stream 0")
            if flags & PADDED:
                if not payload or payload[0] >= len(payload):
                    raise ProtocolError(PROTOCOL_ERROR, "bad padding")
                payload = payload[1 : len(payload) - payload[0]]
            if flags & PRIORITY_FLAG:
                payload = payload[5:]
            self._partial = (stream_id, flags, bytearray(payload))
        else:
            if self._partial is None or self._partial[0] != stream_id:
                raise ProtocolError(PROTOCOL_ERROR, "unexpected CONTINUATION")
            self._partial[2].extend(payload)
            if len(self._partial[2]) > MAX_HEADER_LIST:
                raise ProtocolError(ENHANCE_YOUR_CALM, "header block too large")
        if not flags & END_HEADERS:
            return
        assert self._partial is not None
        stream_id, first_flags, block = self._partial
        self._partial = None
        try:
            fields = [(str(k), str(v)) for k, v in self._decoder.decode(bytes(block))]
        except Exception as exc:  # hpack's errors: a table we can no longer follow
            raise ProtocolError(COMPRESSION_ERROR, f"header block: {exc}") from None
        self._header_block(stream_id, fields, bool(first_flags & END_STREAM))

    def _header_block(self, stream_id: int, fields: list[tuple[str, str]], end: bool) -> None:
        stream = self.streams.get(stream_id)
        if self._client:
            if stream is None:
                if stream_id % 2 == 0 or stream_id > self._last_stream_id:
                    raise ProtocolError(PROTOCOL_ERROR, f"HEADERS on stream {stream_id}")
                return  # a stream we already reset
            if end:
                stream.remote_closed = True
            self.stream_headers(stream, dict(fields), end)
            if end and stream.local_closed:
                self.streams.pop(stream_id, None)
                self._maybe_close()
            return
        if stream is not None:
            # Trailers from a client: only as the end of its stream.
            if not end or stream.remote_closed:
                raise ProtocolError(PROTOCOL_ERROR, "HEADERS in the middle of a stream")
            stream.remote_closed = True
            self.stream_data(stream, b"", True)
            return
        if stream_id % 2 == 0 or stream_id <= self._last_stream_id:
            if stream_id % 2 == 0 or stream_id > self._last_stream_id:
                raise ProtocolError(PROTOCOL_ERROR, f"bad stream id {stream_id}")
            if not end:  # trailers end their stream: this is a new request on an old id
                raise ProtocolError(PROTOCOL_ERROR, f"HEADERS reusing closed stream {stream_id}")
            return  # trailers of a stream we already closed: nothing to do
        self._last_stream_id = stream_id
        stream = Http2Stream(stream_id, self._peer_initial_window)
        self.streams[stream_id] = stream
        self._idle_since = None
        if self._going_away or len(self.streams) > MAX_CONCURRENT_STREAMS:
            self.reset(stream, REFUSED_STREAM)
            return
        stream.remote_closed = end
        problem = request_header_problem(fields)
        if problem is not None:
            self.stream_malformed(stream, problem)
            return
        self.stream_opened(stream, dict(fields), end)

    def _drop(self, stream: Http2Stream, code: int) -> None:
        stream.local_closed = stream.remote_closed = True
        self.streams.pop(stream.id, None)
        if stream.queued:
            self._flush_blocked()  # fails its writers' waits
        self.stream_reset(stream, code)
        self._maybe_close()

    def _local_end(self, stream: Http2Stream) -> None:
        stream.local_closed = True
        if stream.remote_closed:
            self.streams.pop(stream.id, None)
        self._maybe_close()

    def _maybe_close(self) -> None:
        if self.streams or self._closed:
            return
        if self._going_away:
            self.close()
        else:
            self._idle_start()  # the last stream ended

    def open_stream(self) -> Http2Stream:
        """A client's next stream (odd ids); its HEADERS go out with `send_headers`."""
        stream_id = self._last_stream_id + 2 if self._last_stream_id else 1
        self._last_stream_id = stream_id
        stream = Http2Stream(stream_id, self._peer_initial_window)
        self.streams[stream_id] = stream
        self._idle_since = None
        return stream

    # -- hooks -------------------------------------------------------------------

    def stream_headers(self, stream: Http2Stream, headers: dict[str, str], end: bool) -> None:
        """A client's hook: response headers, or trailers when `end`."""
        raise NotImplementedError

    def stream_opened(self, stream: Http2Stream, headers: dict[str, str], end: bool) -> None:
        raise NotImplementedError

    def stream_malformed(self, stream: Http2Stream, problem: str) -> None:
        """A server's hook: a request whose header block RFC 9113 calls malformed."""
        raise NotImplementedError

    def stream_data(self, stream: Http2Stream, payload: bytes, end: bool) -> None:
        raise NotImplementedError

    def stream_reset(self, stream: Http2Stream, code: int) -> None:
        raise NotImplementedError
