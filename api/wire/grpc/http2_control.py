"""The control frames of the lean door's HTTP/2 connection (`http2.Http2Connection`).

The frames that carry no message of a stream. Ours: RST_STREAM (`reset`),
GOAWAY (`goaway`) and the WINDOW_UPDATEs that re-open our receive windows
(`consumed`, `stream_consumed`, `give_back`; the connection's held shut
while its calls hold too much unread: `unread_grew`, `unread_shrank`). The
peer's, as `Http2Connection._frame` dispatches them: WINDOW_UPDATE, PING
(answered, a flood sent away), SETTINGS (its initial stream window and
largest frame, which bound what the sending half in `http2_send.py` may
write) and RST_STREAM. A window opened by WINDOW_UPDATE or SETTINGS releases
the DATA waiting for it (`_flush_blocked`). The peer's GOAWAY stays inline
in `_frame`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from api.wire.grpc.http2_frames import (
    ACK,
    CONNECTION_WINDOW,
    DEFAULT_FRAME,
    ENHANCE_YOUR_CALM,
    FLOW_CONTROL_ERROR,
    FRAME_SIZE_ERROR,
    GOAWAY,
    MAX_WINDOW,
    NO_ERROR,
    PING,
    PING_INTERVAL,
    PING_STRIKES,
    PROTOCOL_ERROR,
    RST_STREAM,
    S_ENABLE_PUSH,
    S_HEADER_TABLE_SIZE,
    S_INITIAL_WINDOW_SIZE,
    S_MAX_FRAME_SIZE,
    SETTING,
    SETTINGS,
    STREAM_WINDOW,
    UNREAD_LIMIT,
    WINDOW_UPDATE,
    Http2Stream,
    ProtocolError,
    frame,
)

__all__ = ["Http2Control"]


class Http2Control:
    """Mixin: the state it uses is set up by `Http2Connection.__init__`."""

    loop: asyncio.AbstractEventLoop
    streams: dict[int, Http2Stream]
    _client: bool
    _closed: bool
    _going_away: bool
    _last_stream_id: int
    _peer_initial_window: int
    _peer_max_frame: int
    _send_window: int
    _recv_window: int
    _recv_unacked: int
    _unread_total: int
    _last_ping: float
    _ping_strikes: int

    if TYPE_CHECKING:
        # From `Http2Sending` and `Http2Connection`; declared for the type
        # checker only, so that no stub here can shadow them in the MRO.
        def write(self, data: bytes) -> None: ...
        def _flush_blocked(self) -> None: ...
        def close(self) -> None: ...
        def _drop(self, stream: Http2Stream, code: int) -> None: ...
        def _maybe_close(self) -> None: ...
        def stream_reset(self, stream: Http2Stream, code: int) -> None: ...

    # -- our side --------------------------------------------------------------

    def reset(self, stream: Http2Stream, code: int) -> None:
        """RST_STREAM from our side; the stream is forgotten."""
        if not self._closed and self.streams.get(stream.id) is stream:
            self.write(frame(RST_STREAM, 0, stream.id, code.to_bytes(4, "big")))
        stream.local_closed = stream.remote_closed = True
        self.streams.pop(stream.id, None)
        if stream.queued:
            self._flush_blocked()  # fails its writers' waits
        self._maybe_close()

    def consumed(self, stream: Http2Stream, size: int) -> None:
        """The application took `size` bytes of this stream: re-open windows."""
        self.give_back(size)
        self.stream_consumed(stream, size)

    def stream_consumed(self, stream: Http2Stream, size: int) -> None:
        """Re-open `size` bytes of this stream's window only (the connection's
        is `give_back`'s). Granted in halves of a window, so a WINDOW_UPDATE
        goes out once per 512 KiB read, not once per message.
        """
        if stream.remote_closed:
            return
        stream.credit += size
        if stream.credit >= STREAM_WINDOW // 2:
            self.write(frame(WINDOW_UPDATE, 0, stream.id, stream.credit.to_bytes(4, "big")))
            stream.recv_window += stream.credit
            stream.credit = 0

    def goaway(self, code: int = NO_ERROR, debug: bytes = b"") -> None:
        """No new streams; open ones may finish (the peer dials again for more)."""
        if self._closed:
            return
        self._going_away = True
        last = 0 if self._client else self._last_stream_id  # the peer's streams we saw
        payload = last.to_bytes(4, "big") + code.to_bytes(4, "big") + debug
        self.write(frame(GOAWAY, 0, 0, payload))

    def give_back(self, size: int) -> None:
        """`size` bytes received count no more against the connection's window.

        Sent in halves of the window, and only while the connection holds at
        most `UNREAD_LIMIT` bytes unread (`unread_grew`): a stream window is
        re-opened as bytes arrive while its call has less than a window
        unread, and 4,096 streams that each keep a window's worth unread (a
        querier's loops waiting for work read nothing) held 4 GiB before
        the connection's own window bounded the sum. Once over the limit the
        peer may still send what its window allows, so a connection holds
        at most UNREAD_LIMIT + CONNECTION_WINDOW unread; it gets more as the
        handlers read (`unread_shrank`).
        """
        self._recv_unacked += size
        self._reopen_connection()

    def unread_grew(self, size: int) -> None:
        """`size` bytes arrived that the application has yet to read."""
        self._unread_total += size

    def unread_shrank(self, size: int) -> None:
        """The application read `size` bytes, or its call ended with them unread."""
        self._unread_total -= size
        self._reopen_connection()

    def _reopen_connection(self) -> None:
        if self._recv_unacked >= CONNECTION_WINDOW // 2 and self._unread_total <= UNREAD_LIMIT:
            self.write(frame(WINDOW_UPDATE, 0, 0, self._recv_unacked.to_bytes(4, "big")))
            self._recv_window += self._recv_unacked
            self._recv_unacked = 0

    # -- receiving -------------------------------------------------------------

    def _on_window_update(self, stream_id: int, payload: bytes) -> None:
        if len(payload) != 4:
            raise ProtocolError(FRAME_SIZE_ERROR, "WINDOW_UPDATE of the wrong size")
        increment = int.from_bytes(payload, "big") & MAX_WINDOW
        if stream_id == 0:
            if not increment:
                raise ProtocolError(PROTOCOL_ERROR, "zero WINDOW_UPDATE")
            self._send_window += increment
            if self._send_window > MAX_WINDOW:
                raise ProtocolError(FLOW_CONTROL_ERROR, "connection window overflow")
        elif stream_id > self._last_stream_id:
            raise ProtocolError(PROTOCOL_ERROR, f"WINDOW_UPDATE on idle stream {stream_id}")
        elif (stream := self.streams.get(stream_id)) is not None:
            stream.send_window += increment
            if not increment or stream.send_window > MAX_WINDOW:
                self.reset(stream, PROTOCOL_ERROR if not increment else FLOW_CONTROL_ERROR)
                self.stream_reset(stream, FLOW_CONTROL_ERROR)
                return
        self._flush_blocked()

    def _on_ping(self, flags: int, stream_id: int, payload: bytes) -> None:
        if stream_id or len(payload) != 8:
            raise ProtocolError(PROTOCOL_ERROR if stream_id else FRAME_SIZE_ERROR, "bad PING")
        if flags & ACK:
            return
        now = self.loop.time()
        if now - self._last_ping < PING_INTERVAL:
            self._ping_strikes += 1
            if self._ping_strikes > PING_STRIKES:
                self.goaway(ENHANCE_YOUR_CALM, b"too_many_pings")
                self.close()
                self._closed = True
                return
        self._last_ping = now
        self.write(frame(PING, ACK, 0, payload))

    def _on_settings(self, flags: int, stream_id: int, payload: bytes) -> None:
        if stream_id:
            raise ProtocolError(PROTOCOL_ERROR, "SETTINGS on a stream")
        if flags & ACK:
            if payload:
                raise ProtocolError(FRAME_SIZE_ERROR, "SETTINGS ack with a payload")
            return
        if len(payload) % 6:
            raise ProtocolError(FRAME_SIZE_ERROR, "SETTINGS of the wrong size")
        before = peak = self._peer_initial_window
        for i in range(0, len(payload), 6):
            key, value = SETTING.unpack_from(payload, i)
            if key == S_INITIAL_WINDOW_SIZE:
                if value > MAX_WINDOW:
                    raise ProtocolError(FLOW_CONTROL_ERROR, "initial window too large")
                self._peer_initial_window = value
                peak = max(peak, value)
            elif key == S_MAX_FRAME_SIZE:
                if not DEFAULT_FRAME <= value <= 16_777_215:
                    raise ProtocolError(PROTOCOL_ERROR, "bad MAX_FRAME_SIZE")
                self._peer_max_frame = value
            elif key == S_ENABLE_PUSH and value > 1:
                raise ProtocolError(PROTOCOL_ERROR, f"ENABLE_PUSH of {value}")
            elif key == S_HEADER_TABLE_SIZE:
                pass  # our encoder never indexes, so any table size suits it
        self._move_stream_windows(self._peer_initial_window - before, peak - before)
        self.write(frame(SETTINGS, ACK, 0))
        self._flush_blocked()

    def _move_stream_windows(self, change: int, peak_change: int) -> None:
        """Move every open stream's send window by a SETTINGS frame's net `change`
        of the initial window, in one walk over the streams.

        RFC 9113 6.9.2 moves them by (new - old) at each INITIAL_WINDOW_SIZE
        entry; walking the streams per entry let one 16 KiB frame (2,730
        entries) over 4,096 streams cost 11 million steps on the event loop.
        The sum of the entries' moves is the net change, so the final windows
        are the same; a window that would pass 2**31 - 1 at any entry is the
        one that would at the largest value (`peak_change`), still checked
        here, so that overflow still ends the connection.
        """
        if not change and not peak_change:
            return
        for stream in self.streams.values():
            if stream.send_window + peak_change > MAX_WINDOW:
                raise ProtocolError(FLOW_CONTROL_ERROR, "initial window overflow")
            stream.send_window += change

    def _on_rst(self, stream_id: int, payload: bytes) -> None:
        if not stream_id or len(payload) != 4:
            raise ProtocolError(PROTOCOL_ERROR, "bad RST_STREAM")
        if stream_id > self._last_stream_id:
            raise ProtocolError(PROTOCOL_ERROR, f"RST_STREAM on idle stream {stream_id}")
        stream = self.streams.get(stream_id)
        if stream is not None:
            self._drop(stream, int.from_bytes(payload, "big"))
