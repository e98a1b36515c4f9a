"""What every machine-facing websocket consumer shares: token auth, parsing and dispatch.

Channels' consumers close stale database connections around *every*
message, which costs a thread hop per frame. These consumers touch the
database only while connecting (token check), so they do that housekeeping
at connect and disconnect only. They have no channel layer, so they also
read their socket's messages straight from Daphne instead of through
Channels' `await_many_dispatch`, which starts a task and an `asyncio.wait`
per message to race sources these consumers do not have. The relay used by
the benchmark inherits the same base, so the comparison stays fair.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import parse_qs

from channels.db import aclose_old_connections, database_sync_to_async

from api.store.exceptions import DATABASE_UNREACHABLE
from api.store.models import ApiToken
from api.store.roles import token_from_header
from api.store.services import api_token_authenticate
from api.wire import token_sockets
from api.wire.consumers.guard import CLIENT_GONE, GuardedConsumer
from api.wire.protocol import Parser, ProtocolError, decode, dumps, error_message, parse

__all__ = [
    "CLOSE_FORBIDDEN",
    "CLOSE_TRY_AGAIN_LATER",
    "CLOSE_UNAUTHENTICATED",
    "MachineConsumer",
    "scope_token",
]

log = logging.getLogger(__name__)

# Sent with the close that rejects a handshake; Daphne turns a close before
# accept into HTTP 403, so clients see the refusal, and the code shows in logs.
CLOSE_UNAUTHENTICATED = 4001
CLOSE_FORBIDDEN = 4003
# The server cannot serve now, the client should retry (HTTP's 503). Not
# RFC 6455's 1013: Daphne's websocket layer refuses to send any code but
# 1000 and 3000-4999, so 1013 went out as a plain 1000 with an error logged.
CLOSE_TRY_AGAIN_LATER = 4503
DATABASE_DOWN = "the token could not be checked: the database did not answer; try again"

_connection_ids = itertools.count(1)


def scope_token(scope: dict[str, Any]) -> str | None:
    """The token of `Authorization: Bearer <t>`, else of `?token=<t>`."""
    for name, value in scope.get("headers", ()):
        if name.lower() == b"authorization":
            return token_from_header(value.decode("latin-1"))
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    values = query.get("token")
    return values[0] if values else None


class MachineConsumer(GuardedConsumer):
    """Base of token-authenticated JSON consumers; subclasses set `roles`.

    `connection_id` names the connection inside this process (request ids of
    the runtime are built from it, so they never collide across sockets).
    Malformed input gets an `error` reply and the socket stays usable; any
    other exception is contained by `GuardedConsumer` (the disconnect
    cleanup at once, then a close with 4500).
    """

    # No channel layer (see `__call__`): replies go straight to the socket of
    # the consumer that owns the request (same process, same runtime).
    roles: frozenset[str] = frozenset()
    # The endpoint's message types, and (set in `opened`) a handler per
    # parsed message class; `receive` dispatches between the two.
    parsers: Mapping[str, Parser] = {}
    handlers: dict[type[Any], Callable[[Any], Awaitable[None]]]
    token: ApiToken | None = None
    accepted = False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Channels' `AsyncConsumer.__call__` for one source: the socket.

        The same steps (scope, no channel layer, `base_send`, dispatch until
        `StopConsumer`), with each message awaited and dispatched in this
        task. A cancellation from Daphne (the client went away for good)
        ends the wait or the dispatch it hits, as it ends Channels' own
        wait; nothing else is left running.
        """
        self.scope = scope
        self.channel_layer = None
        self.base_send = send
        await self.dispatch_until_stopped(receive)

    async def dispatch_guarded(self, message: dict[str, Any]) -> None:
        if message["type"] == "websocket.receive":
            await self.websocket_receive(message)
            return
        await super().dispatch_guarded(message)

    async def connect(self) -> None:
        self.connection_id = f"{self.kind}-{next(_connection_ids)}"
        plaintext = scope_token(self.scope)
        try:
            token = await database_sync_to_async(api_token_authenticate)(plaintext or "")
        except DATABASE_UNREACHABLE as exc:
            # Refused before the accept, this read as a bad token (Daphne's
            # 403), and operators went looking at their tokens: accepted,
            # the socket can say why before it closes.
            log.warning("%s %s: %s (%s)", self.kind, self.connection_id, DATABASE_DOWN, exc)
            await self.accept()
            # Straight to the socket: the frontend's outbox exists only once opened.
            frame = error_message(ProtocolError(None, DATABASE_DOWN), 503)
            await self.send(text_data=dumps(frame))
            await self.close(code=CLOSE_TRY_AGAIN_LATER)
            return
        await aclose_old_connections()
        if token is None:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        if token.role not in self.roles:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.token = token
        await self.opened()
        await self.accept()
        self.accepted = True
        # Revoking the token closes this socket (api.wire.token_sockets).
        token_sockets.registry.add(token.pk, self)
        await self._recheck_token(token.pk)

    async def _recheck_token(self, token_id: int) -> None:
        """Read the token again now the socket is registered.

        A revocation (or expiry) between the first read and the registration
        found no socket of it to close here: the token went on working until
        the next reconcile. From the registration on, one closes it. A
        database that fails now leaves it to that reconcile.
        """
        with contextlib.suppress(*DATABASE_UNREACHABLE):
            await token_sockets.registry.close_dead([token_id])

    async def websocket_disconnect(self, message: dict[str, Any]) -> None:
        if self.token is not None:
            token_sockets.registry.discard(self.token.pk, self)
        await super().websocket_disconnect(message)

    async def release(self, code: int) -> None:
        if self.token is not None:
            token_sockets.registry.discard(self.token.pk, self)
        await super().release(code)

    async def before_revoke(self) -> None:
        """Runs before a revoked token's socket closes (stop taking work, ...)."""

    async def token_revoked(self, reason: str = token_sockets.REVOKED) -> None:
        """Close this socket because its token was revoked or expired: an `error` says which.

        The close then runs the consumer's usual disconnect path (a
        frontend's pending requests are cancelled, a querier's in-flight
        ones go back to the queue).
        """
        await self.before_revoke()
        await self.send_error(ProtocolError(None, reason), status=401)
        await self.close(code=CLOSE_UNAUTHENTICATED, reason=reason)

    @property
    def kind(self) -> str:
        return type(self).__name__.removesuffix("Consumer").lower()

    async def opened(self) -> None:
        """Runs after authentication, before the handshake is accepted."""

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            msg = parse(decode(text_data), self.parsers)
        except ProtocolError as exc:
            await self.send_error(exc)
            return
        await self.guarded(self.handlers[type(msg)], msg)

    async def send_message(self, message: dict[str, Any]) -> None:
        await self.send(text_data=dumps(message))

    async def send_error(self, exc: ProtocolError, status: int = 400) -> None:
        await self.send_message(error_message(exc, status))

    async def guarded(self, handler: Any, message: Any) -> None:
        """Run one handler; a bug answers 500 naming the request, and the socket stays."""
        try:
            await handler(message)
        except ProtocolError as exc:
            await self.send_error(exc)
        except CLIENT_GONE:
            raise  # no bug, and nobody to answer: `dispatch` takes the disconnect path
        except Exception:
            log.exception("%s %s failed handling %r", self.kind, self.connection_id, message)
            # Every message with an `id` is about one request: say which.
            rid = getattr(message, "id", None)
            await self.send_error(ProtocolError(None, "internal error", rid), status=500)
