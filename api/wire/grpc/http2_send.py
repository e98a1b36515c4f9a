"""The sending half of the lean door's HTTP/2 connection (`http2.Http2Connection`).

Writes to one connection are gathered into one socket write per loop turn
(`batch` 1; 0 writes each frame at once, 2 waits a second turn): a loopback
socket call costs far more than joining bytes, and under load several
replies on one connection share a turn.

DATA honours both of the peer's flow-control windows: what fits goes now,
even part of a message (grpc-go opens a 64 KiB window and grows it only as
DATA arrives, so a larger message must go in pieces or it never goes); the
rest waits until a WINDOW_UPDATE (`_flush_blocked`). Waiting is in order per
stream, trailers included (they must not overtake the stream's DATA), and a
stream whose window the peer does not open holds back only its own frames.
`wait_sent` lets a writer await its stream's.
"""

from __future__ import annotations

import asyncio
from collections import deque

from api.wire.grpc.http2_frames import (
    DATA,
    END_HEADERS,
    END_STREAM,
    HEADERS,
    Http2Stream,
    frame,
)

__all__ = ["Http2Sending", "Pending"]


class Pending:
    """A stream's frame waiting for a window: DATA, or a header block queued behind DATA."""

    __slots__ = ("data", "end", "headers", "stream", "waiter")

    def __init__(self, stream: Http2Stream, data: bytes, end: bool, headers: bool) -> None:
        self.stream = stream
        self.data = data
        self.end = end
        self.headers = headers
        self.waiter: asyncio.Future[None] | None = None

    def settle(self, error: Exception | None = None) -> None:
        self.stream.queued -= 1
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            if error is None:
                waiter.set_result(None)
            else:
                waiter.set_exception(error)


class Http2Sending:
    """Mixin: the state it uses is set up by `Http2Connection.__init__`."""

    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport | None
    streams: dict[int, Http2Stream]
    _closed: bool
    _batch: int
    _out: list[bytes]
    _flush_handle: asyncio.Handle | None
    _blocked: deque[Pending]
    _send_window: int
    _peer_max_frame: int
    _ping_strikes: int

    def _local_end(self, stream: Http2Stream) -> None:
        """Our side of `stream` has ended. Each connection defines when a
        stream is then forgotten (the door's, once both sides ended; the
        benchmark client's, once its reader has the end too)."""
        raise NotImplementedError

    def write(self, data: bytes) -> None:
        """Send bytes; batched into one write per loop turn unless disabled."""
        if self._closed or self.transport is None:
            return
        if not self._batch:
            self.transport.write(data)
            return
        self._out.append(data)
        if self._flush_handle is None:
            later = self._flush if self._batch == 1 else self._flush_later
            self._flush_handle = self.loop.call_soon(later)

    def _flush_later(self) -> None:
        self._flush_handle = self.loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_handle = None
        out, self._out = self._out, []
        if out and not self._closed and self.transport is not None:
            self.transport.write(out[0] if len(out) == 1 else b"".join(out))

    def send_headers(self, stream: Http2Stream, block: bytes, *, end: bool = False) -> None:
        if stream.local_closed:
            return
        if stream.queued:
            self._queue(stream, block, end, headers=True)
            return
        self._headers_now(stream, block, end)

    def send_data(self, stream: Http2Stream, data: bytes, *, end: bool = False) -> bool:
        """DATA now as far as both windows allow; False if some waits (`wait_sent`)."""
        if stream.local_closed:
            return True
        if not stream.queued:
            rest = self._send_fitting(stream, data, end)
            if rest is None:
                return True
            data = rest
        self._queue(stream, data, end, headers=False)
        return False

    async def wait_sent(self, stream: Http2Stream) -> None:
        """Until what `send_data` queued on `stream` has gone out (else ConnectionResetError)."""
        for pending in reversed(self._blocked):
            if pending.stream is stream:
                if pending.waiter is None:
                    pending.waiter = self.loop.create_future()
                await pending.waiter
                return

    def _queue(self, stream: Http2Stream, data: bytes, end: bool, *, headers: bool) -> None:
        stream.queued += 1
        self._blocked.append(Pending(stream, data, end, headers))

    def _headers_now(self, stream: Http2Stream, block: bytes, end: bool) -> None:
        self._ping_strikes = 0
        self.write(frame(HEADERS, END_HEADERS | (END_STREAM if end else 0), stream.id, block))
        if end:
            self._local_end(stream)

    def _send_fitting(self, stream: Http2Stream, data: bytes, end: bool) -> bytes | None:
        """Send what both windows allow; the rest (None once all is sent)."""
        room = min(self._send_window, stream.send_window)
        if len(data) <= room or not data:  # (a window may be below 0 after SETTINGS)
            self._send_now(stream, data, end)
            return None
        if room > 0:
            self._send_now(stream, data[:room], False)
            return data[room:]
        return data

    def _send_now(self, stream: Http2Stream, data: bytes, end: bool) -> None:
        self._ping_strikes = 0
        self._send_window -= len(data)
        stream.send_window -= len(data)
        step = self._peer_max_frame
        if len(data) <= step:
            self.write(frame(DATA, END_STREAM if end else 0, stream.id, data))
        else:
            for i in range(0, len(data), step):
                last = end and i + step >= len(data)
                self.write(frame(DATA, END_STREAM if last else 0, stream.id, data[i : i + step]))
        if end:
            self._local_end(stream)

    def _flush_blocked(self) -> None:
        """Send what the windows now allow, each stream's frames in their order."""
        held: set[int] = set()  # streams with an earlier frame still waiting
        kept: deque[Pending] = deque()
        for pending in self._blocked:
            stream = pending.stream
            if stream.local_closed or self.streams.get(stream.id) is not stream:
                pending.settle(ConnectionResetError("stream closed"))
                continue
            if stream.id not in held and not self._closed:
                if pending.headers:
                    pending.settle()
                    self._headers_now(stream, pending.data, pending.end)
                    continue
                rest = self._send_fitting(stream, pending.data, pending.end)
                if rest is None:
                    pending.settle()
                    continue
                pending.data = rest
            held.add(stream.id)
            kept.append(pending)
        self._blocked = kept
