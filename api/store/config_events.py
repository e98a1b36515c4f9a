"""Tells the running scheduler that the config changed, after commit.

Services call `publish(version)` from `transaction.on_commit`, so a
subscriber never sees a version whose rows are not yet visible. The runtime
host subscribes once per process; it then re-reads the config (by version)
and forwards the news to other replicas over the channel layer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

__all__ = ["publish", "subscribe", "unsubscribe"]

logger = logging.getLogger(__name__)

Callback = Callable[[int], None]
_subscribers: list[Callback] = []


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
