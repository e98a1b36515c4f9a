"""An ASGI application for tests of how Daphne itself keeps connections
(config.dead_connections), served by `python -m config.serve` as ours is.

- `/connections`: how many connections Daphne's server holds now; its
  reaper forgets finished ones once a second.
- `/slow`: answers after a fifth of a second, time for its client to reset.
- `/broken`: starts a response, then fails.
- anything else: 200 "ok" (`/healthz`, which DaphneProcess waits for).
"""

from __future__ import annotations

import asyncio
from typing import Any

Scope = dict[str, Any]


def _held_connections(send: Any) -> int:
    # Daphne's `send` is its server's reply method bound to the connection.
    return len(send.func.__self__.connections)


async def _answer(send: Any, body: bytes, *, more: bool = False) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body, "more_body": more})


async def application(scope: Scope, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await receive()  # the (empty) body
    path = scope["path"]
    if path == "/connections":
        await _answer(send, str(_held_connections(send)).encode())
    elif path == "/slow":
        await asyncio.sleep(0.2)
        await _answer(send, b"late")
    elif path == "/broken":
        await _answer(send, b"part of it", more=True)
        raise RuntimeError("failed after the response started")
    else:
        await _answer(send, b"ok")
