"""The frontends connected to this replica, over either protocol.

The inspector lists them and `/metrics` counts them. Websocket frontends
register their consumer here; gRPC frontends are known by the gRPC door's
registry (one row per frontend address, however many streams it opened).
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from api.cluster.replica_frontends import FrontendRow

__all__ = ["FrontendRow", "WebsocketFrontends", "frontend_rows"]


class _Consumer(Protocol):
    scope: dict[str, Any]
    pending: dict[Any, Any]
    token: Any


class WebsocketFrontends:
    """Open `/ws/frontend/` consumers, in the order they connected."""

    def __init__(self) -> None:
        self._open: dict[int, tuple[_Consumer, float]] = {}

    def opened(self, consumer: _Consumer) -> None:
        self._open[id(consumer)] = (consumer, time.monotonic())

    def closed(self, consumer: _Consumer) -> None:
        self._open.pop(id(consumer), None)

    def __len__(self) -> int:
        return len(self._open)

    def rows(self) -> list[FrontendRow]:
        now = time.monotonic()
        return [
            FrontendRow(
                "websocket",
                _peer(consumer.scope),
                getattr(consumer.token, "name", "") or "",
                1,
                len(consumer.pending),
                now - since,
            )
            for consumer, since in self._open.values()
        ]


def frontend_rows(websocket: WebsocketFrontends, grpc_door: Any) -> list[FrontendRow]:
    """Every connected frontend, websocket ones first."""
    rows = websocket.rows()
    if grpc_door is not None:
        rows += [
            FrontendRow("grpc", c.address, c.identity, c.streams, c.outstanding, c.connected_for)
            for c in grpc_door.frontend_connections()
        ]
    return rows


def _peer(scope: dict[str, Any]) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "unknown"
