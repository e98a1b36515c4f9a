"""Freeing each HTTP response when its request ends, not at the next full collection.

Daphne reports `http.disconnect` as soon as a response is finished, and
Django's ASGI handler, which runs a task listening for it beside the view,
takes that as the client gone: the listener ends with `RequestAborted`,
which the handler then reads back from the task. Reading it adds the
handler's frame to the exception's traceback, so the frame, holding the
request and the response, and the task holding the exception point at each
other. Only the cyclic collector frees such a cycle, and the server makes
full collections rare (config/asgi.py): a Daphne serving the largest
tenant's 24 MB editor form held every response it had sent, some 12 MB more
per page, until one ran.

`ReleaseDisconnectListener` notes the task that listens (the one reading
`receive` that is not the request's own) and, once the handler has
returned, drops the traceback of the `RequestAborted` it ended with.
Nothing else points at that frame, so the response goes at once. (Parts
of the request still wait for the collector in Django's own cycles: its
session, messages and form, small beside a page.) Any other exception the
listener ended with is being raised through here, its traceback the news.
"""

from __future__ import annotations

import asyncio
from typing import Any

from django.core.exceptions import RequestAborted

__all__ = ["ReleaseDisconnectListener"]


class ReleaseDisconnectListener:
    """ASGI middleware for HTTP: breaks the handler's cycle (see the module)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        own = asyncio.current_task()
        listeners: list[asyncio.Task[Any]] = []

        async def noted() -> Any:
            task = asyncio.current_task()
            if task is not own and task is not None and task not in listeners:
                listeners.append(task)
            return await receive()

        try:
            return await self.app(scope, noted, send)
        finally:
            for task in listeners:
                # A cancelled listener hands its CancelledError out once and
                # keeps none, so only an exception it ended with is held.
                if task.done() and not task.cancelled():
                    ended = task.exception()
                    if isinstance(ended, RequestAborted):
                        ended.__traceback__ = None
