"""Receiving from the channel layer in a loop that outlives Redis outages, and stops when cancelled.

The config listener and the queue peers each read one process-local channel
for the process's life, retrying every second while Redis is down. Their
stop is a task cancel, which the Redis client underneath may absorb
(`api.cluster.lost_cancels`): read as one more message or one more Redis
failure, the loop would receive again and the host's stop wait on it for ever.
"""

from __future__ import annotations

import asyncio
from typing import Any

from api.cluster.lost_cancels import raise_if_cancelled
from api.wire.outage_log import OutageLog

__all__ = ["receive_retrying"]

RETRY_SECONDS = 1.0


async def receive_retrying(layer: Any, channel: str, outage: OutageLog) -> dict[str, Any]:
    """The next message on `channel`, retrying each second through failures.

    Raises `CancelledError` when the task was cancelled, even if the layer lost the cancel.
    """
    while True:
        raise_if_cancelled()
        try:
            message: dict[str, Any] = await layer.receive(channel)
        except Exception as exc:
            raise_if_cancelled()
            outage.failed(exc)
            await asyncio.sleep(RETRY_SECONDS)
            continue
        raise_if_cancelled()
        outage.worked()
        return message
