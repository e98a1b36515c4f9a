"""Open websocket connections by the API token that authenticated them.

A token is checked once, at the handshake; revoking it must also end the
connections already open with it, on every replica. Machine consumers
register here once accepted and leave on disconnect; the runtime host closes
a token's sockets when it hears of the revocation (at once in the process
that revoked it and, over the channel layer, on the others) and, because
that news can be lost, checks every registered token against the database
on each config reconcile, so no revoked socket outlives one reconcile
interval anywhere. A token's expiry is never announced: that same check
(`api_token_ids_by_state` tells expired tokens from live ones) is what
closes its sockets, the same way, within one reconcile interval
(CONFIG_RECONCILE_SECONDS) plus that round's own work after the expiry.

All calls happen on the event loop that runs the consumers.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Protocol

from channels.db import database_sync_to_async

from api.store.tokens import api_token_ids_by_state

__all__ = ["EXPIRED", "REVOKED", "RevocableSocket", "TokenSockets", "registry"]

# What a closed socket is told (its `error` frame and close reason).
REVOKED = "token revoked"
EXPIRED = "token expired"

log = logging.getLogger(__name__)


class RevocableSocket(Protocol):
    """What a registered connection offers: a way to be closed for revocation."""

    async def token_revoked(self, reason: str = ...) -> None: ...


class TokenSockets:
    """token id -> the open connections it authenticated (in this process)."""

    def __init__(self) -> None:
        self._by_token: dict[int, set[Any]] = {}

    def add(self, token_id: int, socket: RevocableSocket) -> None:
        self._by_token.setdefault(token_id, set()).add(socket)

    def discard(self, token_id: int, socket: RevocableSocket) -> None:
        sockets = self._by_token.get(token_id)
        if sockets is not None:
            sockets.discard(socket)
            if not sockets:
                del self._by_token[token_id]

    def token_ids(self) -> list[int]:
        """The tokens with at least one open connection here."""
        return sorted(self._by_token)

    def count(self, token_id: int) -> int:
        return len(self._by_token.get(token_id, ()))

    async def close_tokens(self, token_ids: Iterable[int], reason: str = REVOKED) -> int:
        """Close every connection of these tokens, telling them `reason`; how many closed."""
        closed = 0
        for token_id in set(token_ids):
            sockets = self._by_token.pop(token_id, set())
            for socket in sockets:
                try:
                    await socket.token_revoked(reason)
                    closed += 1
                except Exception:
                    # One broken socket must not keep the others open.
                    log.exception("closing a socket of token %d failed", token_id)
            if sockets:
                log.info(
                    "%s (token %d): closed %d open connection(s)",
                    reason,
                    token_id,
                    len(sockets),
                )
        return closed

    async def close_dead(self, token_ids: Iterable[int]) -> int:
        """Close the connections of those `token_ids` the database no longer finds
        live, in one read: an expired token's told so, the rest revoked.

        Told "revoked", an operator went looking for who revoked a token
        that had merely run out.
        """
        ids = set(token_ids)
        if not ids:
            return 0
        states = await database_sync_to_async(api_token_ids_by_state)(ids)
        dead = ids - states.live
        if not dead:
            return 0
        closed = await self.close_tokens(states.expired, EXPIRED)
        return closed + await self.close_tokens(dead - states.expired)


registry = TokenSockets()
