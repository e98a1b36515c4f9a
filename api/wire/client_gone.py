"""What a send raises when the client has already closed its connection.

Daphne's websocket layer raises autobahn's `Disconnected`; the ASGI spec
asks servers for an `OSError`, which a reset connection is. Such a send is
no failure of ours: the caller takes its ordinary disconnect path and logs
at debug only. Imports nothing of Django, so the gRPC door may use it.
"""

from __future__ import annotations

import asyncio
import logging

from autobahn.exception import Disconnected

__all__ = ["CLIENT_GONE", "log_task_failure"]

CLIENT_GONE: tuple[type[Exception], ...] = (Disconnected, ConnectionError)


def log_task_failure(
    task: asyncio.Task[None], log: logging.Logger, gone: str, failed: str, *args: object
) -> None:
    """Say why a finished send task failed (asyncio would only at GC, as an error).

    `gone` (debug) when its client had already closed, `failed` (error, with
    the traceback) for anything else; nothing when it ended well.
    """
    if task.cancelled() or (exc := task.exception()) is None:
        return
    if isinstance(exc, CLIENT_GONE):
        log.debug(gone, *args)
    else:
        log.error(failed, *args, exc_info=exc)
