"""The frontends connected to this replica, over either protocol.

The inspector lists them and `/metrics` counts them. Websocket frontends
register their consumer here; gRPC frontends are known by the gRPC door's
registry (one row per frontend address, however many streams it opened).
A websocket frontend that names itself (`?frontend=` on connect) is one
row per name, like a gRPC frontend per address, and the name is what other
replicas know it by; one that does not is a row per socket.
"""

from __future__ import annotations

import re
import time
from typing import Any, Protocol
from urllib.parse import parse_qs

from api.cluster.replica_frontends import FrontendRow
from api.wire.protocol import ProtocolError

__all__ = [
    "MAX_FRONTEND_NAME",
    "FrontendRow",
    "WebsocketFrontends",
    "frontend_name",
    "frontend_rows",
    "websocket_address",
]

MAX_FRONTEND_NAME = 200
# Printable ASCII, no spaces: it is shown, published to peers and compared as is.
_NAME = re.compile(r"[!-~]+")


def frontend_name(scope: dict[str, Any]) -> str | None:
    """The name a websocket frontend gave in `?frontend=`, None if it gave none.

    Raises ProtocolError (field `frontend`) for a name that is empty, too
    long, not printable ASCII without spaces, or given more than once.
    """
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    values = query.get("frontend")
    if values is None:
        return None
    if len(values) > 1:
        raise ProtocolError("frontend", "frontend: given more than once")
    name = values[0]
    if not name:
        raise ProtocolError("frontend", "frontend: must not be empty")
    if len(name) > MAX_FRONTEND_NAME:
        raise ProtocolError("frontend", f"frontend: at most {MAX_FRONTEND_NAME} characters")
    if not _NAME.fullmatch(name):
        raise ProtocolError("frontend", "frontend: printable ASCII without spaces only")
    return name


class _Consumer(Protocol):
    scope: dict[str, Any]
    pending: dict[Any, Any]
    token: Any
    frontend_name: str | None


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
        """A row per named frontend (its sockets as streams), else per socket.

        A named frontend's row has its oldest socket's age and the names of
        every token its sockets use, so a name shared across tokens shows.
        """
        now = time.monotonic()
        rows: list[FrontendRow] = []
        named: dict[str, int] = {}
        tokens: dict[str, set[str]] = {}
        for consumer, since in self._open.values():
            name = consumer.frontend_name
            token = getattr(consumer.token, "name", "") or ""
            row = FrontendRow(
                "websocket",
                websocket_address(consumer),
                token,
                1,
                len(consumer.pending),
                now - since,
            )
            if name is None:
                rows.append(row)
            elif (at := named.get(name)) is None:
                named[name] = len(rows)
                tokens[name] = {token}
                rows.append(row)
            else:
                tokens[name].add(token)
                first = rows[at]
                rows[at] = first._replace(
                    streams=first.streams + 1, outstanding=first.outstanding + row.outstanding
                )
        for name, at in named.items():
            rows[at] = rows[at]._replace(name=", ".join(sorted(filter(None, tokens[name]))))
        return rows

    def names(self) -> set[str]:
        """The names the open sockets' frontends gave."""
        return {c.frontend_name for c, _ in self._open.values() if c.frontend_name is not None}


def frontend_rows(websocket: WebsocketFrontends, grpc_door: Any) -> list[FrontendRow]:
    """Every connected frontend, websocket ones first."""
    rows = websocket.rows()
    if grpc_door is not None:
        rows += [
            FrontendRow("grpc", c.address, c.identity, c.streams, c.outstanding, c.connected_for)
            for c in grpc_door.frontend_connections()
        ]
    return rows


def websocket_address(consumer: Any) -> str:
    """What a websocket frontend is listed by: the name it gave, else its peer.

    The frontends panel and each request's row (`queue_rows`) both show it,
    so the two can be matched.
    """
    name = getattr(consumer, "frontend_name", None)
    if name is not None:
        return str(name)
    client = getattr(consumer, "scope", {}).get("client")
    return f"{client[0]}:{client[1]}" if client else "unknown"
