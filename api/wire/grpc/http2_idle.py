"""The idle limit of the lean door's HTTP/2 connections (`http2.Http2Connection`).

As grpc-go's `MaxConnectionIdle` (Cortex's
`-server.grpc.keepalive.max-connection-idle`; GRPC_MAX_CONNECTION_IDLE_SECONDS
here): a connection that has had no open stream for `max_connection_idle`
seconds gets GOAWAY NO_ERROR ("max_idle") and, having no stream left to
finish, is closed.
So a client that sent the preface and never opened a stream, or whose streams
all ended, does not hold its socket for ever. Frontends and queriers hold
long-lived streams, so a connection in use is never touched; 0 turns it off.

Idle time starts when the client's preface is seen or the last open stream
ends, and stops when a stream opens. Nothing of this runs per frame: a stream
opening sets `_idle_since` to None, the streams dropping to none (a stream's
end, not a frame) reads the clock, and one timer per connection is armed only
when none is pending; it re-arms itself for the rest of the time if a stream
came and went in between.

Invariant: on a live connection with the limit on, whenever `_idle_since` is
set `streams` is empty and a timer is pending that fires no later than
`_idle_since + _max_idle`; the timer, when it fires, sends the connection away
only if `streams` is still empty and it has been idle that long (a stream open
now means no action: the streams' next drop to none arms a new timer); after
`connection_lost` no timer is pending.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from api.wire.grpc.http2_frames import NO_ERROR, Http2Stream

__all__ = ["IDLE_DEBUG", "Http2Idle"]

# GOAWAY's debug data when the idle limit sends a connection away.
IDLE_DEBUG = b"max_idle"


class Http2Idle:
    """Mixin: the state it uses is set up by `Http2Connection.__init__`.

    `_max_idle` (seconds, 0: off), `_idle_since` (loop time the connection
    became idle, None while a stream has opened since), `_idle_timer`.
    """

    loop: asyncio.AbstractEventLoop
    streams: dict[int, Http2Stream]
    _closed: bool
    _going_away: bool
    _max_idle: float
    _idle_since: float | None
    _idle_timer: asyncio.TimerHandle | None

    if TYPE_CHECKING:
        # From `Http2Control` and `Http2Connection`, for the type checker only.
        def goaway(self, code: int = NO_ERROR, debug: bytes = b"") -> None: ...
        def _maybe_close(self) -> None: ...

    def _idle_start(self) -> None:
        """No stream is open (the preface seen, or the last stream ended)."""
        if not self._max_idle or self._idle_since is not None:
            return  # off, or idle already: the time counts from then
        self._idle_since = now = self.loop.time()
        if self._idle_timer is None:
            self._idle_timer = self.loop.call_at(now + self._max_idle, self._idle_check)

    def _idle_check(self) -> None:
        self._idle_timer = None
        if self._closed or self._going_away or self.streams or self._idle_since is None:
            return  # gone, going, or busy: the next drop to no stream arms a timer
        due = self._idle_since + self._max_idle
        if self.loop.time() < due - 0.001:  # uvloop's timers may fire a millisecond early
            # A stream opened and ended since this timer was armed.
            self._idle_timer = self.loop.call_at(due, self._idle_check)
            return
        self.goaway(NO_ERROR, IDLE_DEBUG)
        self._maybe_close()

    def _idle_stop(self) -> None:
        """The connection is lost: no callback on it from here on."""
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
