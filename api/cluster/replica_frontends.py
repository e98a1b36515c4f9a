"""A replica's frontends as its published summary carries them (scale-out).

Each replica publishes its top `MAX_PUBLISHED_FRONTENDS` frontend rows by
`frontend_rank`, plus the true count and outstanding total over all of
them. The cap loses nothing the inspector shows: the ranking is unique
within one replica, so the merged panel's first N rows (same rank, ties
broken by replica) are always among the union of every replica's first N.
The block is `[total, outstanding, rows]`, each row
`[transport, address, name, streams, outstanding, connected_for]`, so a
crowded replica adds at most a few kilobytes to its summary.

Pure functions; `api.cluster.replicas` puts the block into summaries and reads it
back, and `dashboard.frontend_view` builds the merged panel.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import Any, NamedTuple

__all__ = [
    "MAX_PUBLISHED_FRONTENDS",
    "FrontendRow",
    "ReplicaFrontends",
    "frontend_rank",
    "frontends_block",
    "parse_frontends_block",
]

# As many as the inspector's panel shows (dashboard.frontend_view
# .MAX_FRONTENDS_SHOWN, at most this), so the merged panel stays exact.
MAX_PUBLISHED_FRONTENDS = 50
_TRANSPORTS = ("websocket", "grpc")


class FrontendRow(NamedTuple):
    """One frontend as the inspector shows it."""

    transport: str  # "websocket" or "grpc"
    address: str
    # Who it is: the token's name (websocket), the client certificate's
    # common name (gRPC with mutual TLS), else "".
    name: str
    streams: int
    outstanding: int  # queued or in flight
    connected_for: float | None  # seconds; None where the transport does not say


def frontend_rank(row: FrontendRow) -> tuple[int, str, str]:
    """Most outstanding first, then by address: unique within one replica."""
    return (-row.outstanding, row.address, row.transport)


class ReplicaFrontends(NamedTuple):
    """One replica's frontends: its top rows, and totals over all of them."""

    replica: str
    total: int
    outstanding: int
    rows: tuple[FrontendRow, ...]

    def aged(self, seconds: float) -> ReplicaFrontends:
        """The same rows `seconds` later: connected-for ages grow, nothing else."""
        rows = tuple(
            row
            if row.connected_for is None
            else row._replace(connected_for=row.connected_for + seconds)
            for row in self.rows
        )
        return self._replace(rows=rows)


def frontends_block(rows: Sequence[FrontendRow]) -> list[Any]:
    """The JSON-ready block of one replica's frontends for its summary."""
    top = heapq.nsmallest(MAX_PUBLISHED_FRONTENDS, rows, key=frontend_rank)
    return [
        len(rows),
        sum(row.outstanding for row in rows),
        [[*row[:5], None if row[5] is None else round(row[5], 1)] for row in top],
    ]


def parse_frontends_block(replica: str, raw: Any) -> ReplicaFrontends | None:
    """The block as read from a peer; None when it published none.

    Raises TypeError or ValueError on a malformed block (the caller refuses
    the whole summary, as for a malformed querier row).
    """
    if raw is None:
        return None
    total, outstanding, rows = raw
    parsed = []
    for transport, address, name, streams, pending, since in rows:
        if transport not in _TRANSPORTS:
            raise ValueError(f"unknown frontend transport {transport!r}")
        age = None if since is None else float(since)
        parsed.append(
            FrontendRow(transport, str(address), str(name), int(streams), int(pending), age)
        )
    return ReplicaFrontends(replica, int(total), int(outstanding), tuple(parsed))
