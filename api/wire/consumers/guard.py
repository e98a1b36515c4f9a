"""No exception escapes a websocket consumer; a shutdown closes every socket cleanly.

An exception that escapes a Channels consumer ends its application task:
Daphne closes the socket with 1011 and the `websocket.disconnect` that
follows finds nobody to run `disconnect()`, so a querier stays listed and
keeps being handed requests, and a frontend's requests stay queued against
its tenant's limit. `GuardedConsumer` catches every exception around every
message and sends the connection down the normal disconnect path at once,
then tells the client (an `error` frame, then a close with
`CLOSE_INTERNAL_ERROR`; Daphne sends no close reason, so the frame carries
it). A failing `connect` is cleaned up the same way and still fails the
handshake.

A send that finds the client gone (`CLIENT_GONE`: its close crossed our
frame on the wire, and the `websocket.disconnect` saying so is still queued)
is no failure of ours: it takes the same disconnect path, logged at debug
only, so any client cannot fill the error log by closing at the right time.

Open sockets are kept in `OPEN_SOCKETS`, so the runtime host can close
every one with `CLOSE_SHUTDOWN` (1000) after a drain, once each consumer has
flushed what it still had to send (`flush`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer

from api.wire.client_gone import CLIENT_GONE

__all__ = [
    "CLIENT_GONE",
    "CLOSE_SHUTDOWN",
    "CLOSE_INTERNAL_ERROR",
    "OPEN_SOCKETS",
    "GuardedConsumer",
    "close_all",
]

log = logging.getLogger(__name__)

# The server failed handling a message; the connection was cleaned up as for
# a disconnect. 4000-4999 are the application's (RFC 6455 section 7.4.2).
CLOSE_INTERNAL_ERROR = 4500
# How a shutdown closes every socket, once each request was answered: a
# normal closure. (RFC 6455's 1001 "going away" would fit, but Daphne's
# websocket layer, autobahn, lets a server send only 1000 or 3000-4999.)
CLOSE_SHUTDOWN = 1000

OPEN_SOCKETS: set[GuardedConsumer] = set()


class GuardedConsumer(AsyncWebsocketConsumer):
    """A consumer whose failures end in `disconnect()`, never in a dead task.

    Subclasses keep `disconnect()` idempotent (it may run twice: once when a
    failure is contained, once when the client's close arrives) and may
    override `release` (what a contained failure runs: `disconnect()` by
    default), `failure_frame` and `flush`.
    """

    abandoned = False

    async def dispatch(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if self.abandoned and kind == "websocket.receive":
            return  # closing after a failure; what the client still sends is moot
        try:
            await self.dispatch_guarded(message)
        except StopConsumer:
            OPEN_SOCKETS.discard(self)
            raise
        except CLIENT_GONE:
            log.debug("%s: the client left while %s was answered", type(self).__name__, kind)
            await self.abandon(kind)
        except Exception:
            log.exception("%s failed handling %s", type(self).__name__, kind)
            await self.abandon(kind)

    async def dispatch_guarded(self, message: dict[str, Any]) -> None:
        """Dispatch one message (subclasses may take a faster route)."""
        await super().dispatch(message)

    async def dispatch_until_stopped(self, receive: Any) -> None:
        """Each message from the socket, dispatched in turn, until `StopConsumer`.

        However it ends, the socket leaves `OPEN_SOCKETS`: a consumer Daphne
        cancelled while it worked through a backlog (its client gone) stayed
        there for good, and `close_all` waited out its timeout at every
        shutdown for a socket that would never close.
        """
        try:
            while True:
                await self.dispatch(await receive())
        except StopConsumer:
            pass
        finally:
            OPEN_SOCKETS.discard(self)

    async def accept(self, subprotocol: str | None = None, headers: Any = None) -> None:
        await super().accept(subprotocol, headers)
        OPEN_SOCKETS.add(self)

    async def abandon(self, kind: str | None) -> None:
        """The normal disconnect path now, then tell the client and close."""
        first = not self.abandoned
        self.abandoned = True
        OPEN_SOCKETS.discard(self)
        if first:
            try:
                await self.release(CLOSE_INTERNAL_ERROR)
            except Exception:
                log.exception("%s: disconnect cleanup failed", type(self).__name__)
        if kind == "websocket.disconnect":
            raise StopConsumer()  # the socket is gone already
        if kind == "websocket.connect":
            # The handshake was never answered: refuse it (Daphne answers 403).
            with contextlib.suppress(Exception):
                await self.close()
            return
        if not first:
            return
        with contextlib.suppress(Exception):
            await self.send(text_data=self.failure_frame())
        with contextlib.suppress(Exception):
            await self.close(code=CLOSE_INTERNAL_ERROR)

    async def release(self, code: int) -> None:
        """The normal disconnect path, run by a contained failure (`disconnect`)."""
        await self.disconnect(code)

    def failure_frame(self) -> str:
        """The text frame sent before the close that follows a failure."""
        return '{"type":"error","status":500,"error":"internal error; connection closed"}'

    async def flush(self) -> None:
        """Wait for sends still scheduled (overridden where there are any)."""


async def close_all(code: int = CLOSE_SHUTDOWN, timeout: float = 2.0) -> int:
    """Close every open socket after its pending sends; wait for the closes.

    Returns how many sockets were open. The wait ends when every consumer
    has seen its client's close (or after `timeout`), so the close frames are
    out before the process exits.
    """
    sockets = list(OPEN_SOCKETS)
    for consumer in sockets:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(consumer.flush(), timeout)
        try:
            await consumer.close(code=code)
        except Exception:
            log.exception("closing %s at shutdown failed", type(consumer).__name__)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while any(consumer in OPEN_SOCKETS for consumer in sockets) and loop.time() < deadline:
        await asyncio.sleep(0.02)
    return len(sockets)
