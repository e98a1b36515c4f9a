"""Telling a long-running view that its client went away (ASGI, around Django).

Django runs a sync view to its end even when the client disconnects (its
handler cancels the task, but a view thread cannot be interrupted), so a
simulation would run on for nobody. This wrapper puts a `threading.Event`
in the scope of every HTTP request to the paths it guards (`ABANDONED`)
and sets it when Daphne reports `http.disconnect` (Django listens for it
after reading the body); the simulate view hands that event to its run as
the cancel flag, and the worker stops.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["ABANDONED", "GUARDED_PREFIXES", "AbandonOnDisconnect"]

ABANDONED = "queue_inspector.abandoned"
GUARDED_PREFIXES = ("/api/v1/simulate/",)


class AbandonOnDisconnect:
    """ASGI middleware: `scope[ABANDONED]` is set once the client disconnects."""

    def __init__(self, app: Any, prefixes: tuple[str, ...] = GUARDED_PREFIXES) -> None:
        self.app = app
        self.prefixes = prefixes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope.get("type") != "http" or not str(scope.get("path", "")).startswith(self.prefixes):
            return await self.app(scope, receive, send)
        abandoned = threading.Event()
        scope = {**scope, ABANDONED: abandoned}

        async def watched() -> Any:
            message = await receive()
            if message.get("type") == "http.disconnect":
                abandoned.set()
            return message

        return await self.app(scope, watched, send)
