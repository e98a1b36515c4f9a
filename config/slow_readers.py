"""Websocket clients that stop reading are dropped rather than buffered for.

Daphne writes each frame the application sends straight to the socket's
Twisted transport, which keeps in memory, without a bound, whatever the
client has not read yet. A frontend that kept sending (any message it sends
counts as a sign of life to Daphne's keepalive, which then never pings it)
and never read made the server hold every result of its requests: 400
results of 900 KB took 300 MB, held for as long as the connection stayed.

Twisted tells a transport's streaming producer to pause once more than the
transport's `bufferSize` bytes wait unsent, and to resume once they have
all gone. `install()` makes every websocket Daphne opens register such a
producer (`UnsentWatch`) with a `bufferSize` of `UNSENT_LIMIT_BYTES`.
Paused, it looks at the backlog every `SLOW_READER_SECONDS`: one that has
not shrunk over that time (the client read nothing, or less than was sent
to it meanwhile) gets the connection aborted. The application then sees an
ordinary disconnect, so the requests of a frontend are cancelled as for any
frontend that leaves. A client that reads, however slowly it works through
a burst of large results, shrinks its backlog and is kept.

Both are settings (config/settings.py), read from the environment:
WEBSOCKET_UNSENT_LIMIT_BYTES and WEBSOCKET_SLOW_READER_SECONDS.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = [
    "SLOW_READER_SECONDS",
    "UNSENT_LIMIT_BYTES",
    "UnsentWatch",
    "install",
    "unsent_bytes",
    "watch",
]

log = logging.getLogger(__name__)

# Far above any one message the protocols send (a result is at most 16 MiB
# on the gRPC door's side and 1 MiB from a websocket querier), so only a
# backlog of several trips the watch.
UNSENT_LIMIT_BYTES = 32 * 1024 * 1024
SLOW_READER_SECONDS = 10.0


class UnsentWatch:
    """One websocket's streaming producer: Twisted pauses it when more than its
    transport's `bufferSize` waits unsent and resumes it once all has gone.

    While paused, every `seconds` the backlog (`unsent_bytes`) is compared with
    the one `seconds` before; not smaller, the connection is aborted. Only
    the drain to nothing resumes a producer, so a timer that merely ran to
    its end would also drop a client that reads steadily through a burst
    longer than `seconds`.
    """

    def __init__(self, protocol: Any, clock: Any, seconds: float, socket_side: Any) -> None:
        self._protocol = protocol
        self._clock = clock
        self._seconds = seconds
        self._socket = socket_side
        self._timer: Any = None
        self._backlog = 0

    def pauseProducing(self) -> None:  # noqa: N802 - Twisted's IPushProducer
        if self._timer is None:
            self._look_again()

    def resumeProducing(self) -> None:  # noqa: N802
        self._cancel()

    def stopProducing(self) -> None:  # noqa: N802 - the connection is gone
        self._cancel()

    def _cancel(self) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None

    def _look_again(self) -> None:
        self._backlog = unsent_bytes(self._socket)
        self._timer = self._clock.callLater(self._seconds, self._check)

    def _check(self) -> None:
        self._timer = None
        # Closed meanwhile: autobahn's dropConnection unregisters this producer
        # first, so Twisted never told it to stop, and the look still came.
        if self._socket.disconnected or self._socket.disconnecting:
            return
        backlog = unsent_bytes(self._socket)
        if backlog < self._backlog:
            self._look_again()
            return
        peer = getattr(self._protocol, "client_addr", None)
        path = getattr(self._protocol, "path", b"")
        log.warning(
            "websocket %s from %s: its client left a backlog of %d unsent bytes (over the "
            "limit) unshrunk for %g s; dropping the connection",
            path.decode("latin-1") if isinstance(path, bytes) else path,
            ":".join(map(str, peer)) if peer else "?",
            backlog,
            self._seconds,
        )
        self._protocol.transport.abortConnection()


def unsent_bytes(socket_side: Any) -> int:
    """What Twisted's transport (its `FileDescriptor`) holds unsent.

    Twisted has no public call for it: `dataBuffer` from `offset` on, and the
    chunks written since (`_tempDataLen`). tests/config/test_slow_readers.py
    checks a real transport still has them.
    """
    return len(socket_side.dataBuffer) - socket_side.offset + socket_side._tempDataLen


def _tcp_transport(transport: Any) -> Any:
    """The transport that holds the socket's bytes (under TLS, the one it wraps)."""
    while transport is not None and not isinstance(getattr(transport, "bufferSize", None), int):
        transport = getattr(transport, "transport", None)
    return transport


def watch(protocol: Any, clock: Any, limit: int, seconds: float) -> None:
    """Register an `UnsentWatch` for `protocol`'s transport."""
    transport = protocol.transport
    socket_side = _tcp_transport(transport)
    if socket_side is None:
        log.warning("websocket: no socket under %r; not watched for slow reading", transport)
        return
    socket_side.bufferSize = limit
    # The HTTP channel that took the upgrade request registered itself as
    # this transport's producer and never unregistered when Daphne handed
    # the transport over: a second registration would raise.
    transport.unregisterProducer()
    transport.registerProducer(UnsentWatch(protocol, clock, seconds, socket_side), True)


def install(
    clock: Any, *, limit: int = UNSENT_LIMIT_BYTES, seconds: float = SLOW_READER_SECONDS
) -> None:
    """Make every websocket Daphne opens from now on watched (`clock`: the reactor)."""
    from daphne.ws_protocol import WebSocketFactory, WebSocketProtocol  # type: ignore[import-untyped]

    class WatchedWebSocketProtocol(WebSocketProtocol):  # type: ignore[misc]
        def connectionMade(self) -> None:  # noqa: N802 - Twisted's name
            super().connectionMade()
            watch(self, clock, limit, seconds)

    WebSocketFactory.protocol = WatchedWebSocketProtocol
