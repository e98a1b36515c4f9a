"""Tells the running scheduler that the config changed (or a token was revoked), after commit.

Services call `publish(version)` from `transaction.on_commit`, so a
subscriber never sees a version whose rows are not yet visible. The runtime
host subscribes once per process; it then re-reads the config (by version)
and forwards the news to other replicas over the channel layer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

__all__ = [
    "publish",
    "publish_token_revoked",
    "subscribe",
    "subscribe_token_revoked",
    "unsubscribe",
    "unsubscribe_token_revoked",
]

logger = logging.getLogger(__name__)

Callback = Callable[[int], None]
_subscribers: list[Callback] = []
# Token revocations travel the same way (after commit, then to the other
# replicas): callbacks get the revoked token's id.
_revocation_subscribers: list[Callback] = []


def subscribe(callback: Callback) -> None:
    """Call `callback(version)` after every committed config change (once per callback)."""
    if callback not in _subscribers:
        _subscribers.append(callback)


def unsubscribe(callback: Callback) -> None:
    """Stop calling `callback`; unknown callbacks are ignored."""
    if callback in _subscribers:
        _subscribers.remove(callback)


def publish(version: int) -> None:
    """Call every subscriber with the new global config version.

    A failing subscriber is logged and skipped: the change is already
    committed, and the periodic reconcile by version catches up.
    """
    for callback in list(_subscribers):
        try:
            callback(version)
        except Exception:
            logger.exception("config change subscriber %r failed for version %d", callback, version)


def subscribe_token_revoked(callback: Callback) -> None:
    """Call `callback(token_id)` after every committed token revocation."""
    if callback not in _revocation_subscribers:
        _revocation_subscribers.append(callback)


def unsubscribe_token_revoked(callback: Callback) -> None:
    if callback in _revocation_subscribers:
        _revocation_subscribers.remove(callback)


def publish_token_revoked(token_id: int) -> None:
    """Tell every subscriber a token was revoked (failures logged: the reconcile catches up)."""
    for callback in list(_revocation_subscribers):
        try:
            callback(token_id)
        except Exception:
            logger.exception("revocation subscriber %r failed for token %d", callback, token_id)
