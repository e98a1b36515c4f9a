"""The sending half of the lean door's HTTP/2 connection (`http2.Http2Connection`).

Writes to one connection are gathered into one socket write per loop turn
(`batch` 1; 0 writes each frame at once, 2 waits a second turn): a loopback
socket call costs far more than joining bytes, and under load several
replies on one connection share a turn. DATA honours both of the peer's
flow-control windows; what does not fit waits, in order, until its
WINDOW_UPDATE (`_flush_blocked`), and `wait_sent` lets a writer await that.
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

__all__ = ["Http2Sending"]


class Http2Sending:
    """Mixin: the state it uses is set up by `Http2Connection.__init__`."""

    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport | None
    streams: dict[int, Http2Stream]
    _closed: bool
    _batch: int
    _out: list[bytes]
    _flush_handle: asyncio.Handle | None
    _blocked: deque[tuple[Http2Stream, bytes, bool, asyncio.Future[None] | None]]
    _send_window: int
    _peer_max_frame: int
    _ping_strikes: int

    def _local_end(self, stream: Http2Stream) -> None:
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
        self._ping_strikes = 0
        self.write(frame(HEADERS, END_HEADERS | (END_STREAM if end else 0), stream.id, block))
        if end:
            self._local_end(stream)

    def send_data(self, stream: Http2Stream, data: bytes, *, end: bool = False) -> bool:
        """DATA now if both windows allow; else False and it waits (`wait_sent`)."""
        if stream.local_closed:
            return True
        if self._blocked or len(data) > min(self._send_window, stream.send_window):
            self._blocked.append((stream, data, end, None))
            return False
        self._send_now(stream, data, end)
        return True

    async def wait_sent(self) -> None:
        """Until the last DATA queued by `send_data` has gone out."""
        if not self._blocked:
            return
        stream, data, end, _ = self._blocked[-1]
        waiter = self.loop.create_future()
        self._blocked[-1] = (stream, data, end, waiter)
        await waiter

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
        # In order: a later small message must not overtake an earlier large one.
        while self._blocked:
            stream, data, end, waiter = self._blocked[0]
            if stream.local_closed or stream.id not in self.streams:
                self._blocked.popleft()
                if waiter is not None and not waiter.done():
                    waiter.set_exception(ConnectionResetError("stream closed"))
                continue
            if len(data) > min(self._send_window, stream.send_window):
                return
            self._blocked.popleft()
            self._send_now(stream, data, end)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
