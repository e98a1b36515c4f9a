"""Frontends → the inspector's frontends panel, for one replica or all of them.

Pure functions, no Django. Rows come from `api.wire.runtime_host.frontends()`
(websocket consumers and gRPC frontend addresses alike) and, in scale-out
mode, from the peers' summaries (`api.cluster.replica_frontends`). The panel is
capped because a replica may serve thousands of frontends while an operator
reads a few dozen; the ones holding the most outstanding requests are the
ones worth a look, so they come first and the total still counts every
frontend.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import Any

from api.cluster.replica_frontends import ReplicaFrontends, frontend_rank
from api.wire.frontends import FrontendRow

__all__ = [
    "MAX_FRONTENDS_SHOWN",
    "build_frontends",
    "build_merged_frontends",
    "local_frontends",
]

# At most MAX_PUBLISHED_FRONTENDS (what a peer publishes), so the merged
# panel's rows are exactly those a full merge of every row would show.
MAX_FRONTENDS_SHOWN = 50


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
    this replica's alone. `heapq.nsmallest` keeps the cost at O(n log cap)
    for a crowded replica and returns the same rows, in the same order, as a
    full sort would.
    """
    shown = heapq.nsmallest(MAX_FRONTENDS_SHOWN, rows, key=frontend_rank)
    return {
        "total": len(rows),
        "hidden": len(rows) - len(shown),
        "outstanding": sum(row.outstanding for row in rows),
        "local_only": local_only,
        "frontends": [_row(row) for row in shown],
    }


def build_merged_frontends(
    local: ReplicaFrontends, peers: Sequence[ReplicaFrontends], missing: Sequence[str] = ()
) -> dict[str, Any]:
    """The panel over every replica: each row names its `replica`; totals summed.

    Rows rank as on one replica, ties broken by replica ID (the same gRPC
    frontend address is connected to every replica), so the order is total
    and stable from tick to tick. `missing` are live peers that publish no
    frontends (older replicas): the panel then keeps `local_only` set,
    meaning its rows do not cover every replica, and names them. The panel
    gains `replicas` (every replica ID, sorted) and `missing`; the
    single-replica panel has neither.
    """
    every = (local, *peers)
    tagged = ((row, part.replica) for part in every for row in part.rows)
    shown = heapq.nsmallest(
        MAX_FRONTENDS_SHOWN, tagged, key=lambda pair: (*frontend_rank(pair[0]), pair[1])
    )
    total = sum(part.total for part in every)
    return {
        "total": total,
        "hidden": total - len(shown),
        "outstanding": sum(part.outstanding for part in every),
        "local_only": bool(missing),
        "frontends": [{**_row(row), "replica": replica} for row, replica in shown],
        "replicas": sorted({part.replica for part in every} | set(missing)),
        "missing": sorted(missing),
    }


def local_frontends(replica: str, rows: Sequence[FrontendRow]) -> ReplicaFrontends:
    """This replica's rows in the shape peers publish theirs (uncapped: merged here)."""
    return ReplicaFrontends(replica, len(rows), sum(r.outstanding for r in rows), tuple(rows))
