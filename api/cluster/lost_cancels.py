"""A cancel the Redis client lost, honoured by the loops that call it.

The runtime host stops its background loops by cancelling their tasks and
awaiting them. redis-py's asyncio client (8.2, under channels_redis too)
sometimes absorbs a task's cancel: a command cancelled at the wrong moment
returns normally, the task stays marked as cancelling, and a loop around it
goes on for ever (one cancel in about twenty landed so, in a loop of SET
commands on a local Redis). The replica-summary loop did that at shutdown:
the host awaited it for ever, so a replica told to stop failed its queue
back, then hung without closing a socket or withdrawing from its groups,
until SIGKILL. Each long-lived loop that calls Redis asks here, once a turn,
whether its task was cancelled meanwhile.

May import: the standard library only.
"""

from __future__ import annotations

import asyncio

__all__ = ["raise_if_cancelled"]


def raise_if_cancelled() -> None:
    """Raise `CancelledError` if this task has a cancel pending that nothing raised.

    `Task.cancelling()` counts cancel requests not yet taken back with
    `uncancel()`; code that swallows the `CancelledError` leaves it set.
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
