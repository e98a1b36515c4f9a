"""This replica's frontends → the inspector's frontends panel.

Pure functions, no Django. Rows come from `api.runtime_host.frontends()`
(websocket consumers and gRPC frontend addresses alike). The panel is capped
because a replica may serve thousands of frontends while an operator reads a
few dozen; the ones holding the most outstanding requests are the ones worth
a look, so they come first and the total still counts every frontend.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import Any

from api.frontends import FrontendRow

__all__ = ["MAX_FRONTENDS_SHOWN", "build_frontends"]

MAX_FRONTENDS_SHOWN = 50


def _rank(row: FrontendRow) -> tuple[int, str, str]:
    return (-row.outstanding, row.address, row.transport)


def _row(row: FrontendRow) -> dict[str, Any]:
    since = row.connected_for
    return {
        "transport": row.transport,
        "address": row.address,
        "name": row.name,
        "streams": row.streams,
        "outstanding": row.outstanding,
        "for": None if since is None else round(max(0.0, since), 1),
    }


def build_frontends(rows: Sequence[FrontendRow], *, local_only: bool = False) -> dict[str, Any]:
    """The panel: most outstanding first, then by address, at most `MAX_FRONTENDS_SHOWN`.

    `local_only` says the service has several replicas while these rows are
    this replica's alone (frontends are not part of the peers' summaries).
    `heapq.nsmallest` keeps the cost at O(n log cap) for a crowded replica
    and returns the same rows, in the same order, as a full sort would.
    """
    shown = heapq.nsmallest(MAX_FRONTENDS_SHOWN, rows, key=_rank)
    return {
        "total": len(rows),
        "hidden": len(rows) - len(shown),
        "outstanding": sum(row.outstanding for row in rows),
        "local_only": local_only,
        "frontends": [_row(row) for row in shown],
    }
