"""Hand-built queue snapshots and replica summaries for the cluster tests.

`snapshot` builds a `QueueSnapshot` on a given queue clock; `peer` and
`encoded` are a replica's summary as it travels over Redis (parsed back, or
the published bytes), published at a wall time near `WALL`.
"""

from __future__ import annotations

import json
from typing import Any

from api.cluster.replicas import PeerSummary, summarize
from scheduler_core.snapshot import LeafSnapshot, QuerierSnapshot, QueueSnapshot, TenantSnapshot

WALL = 1_700_000_000.0


def snapshot(
    taken_at: float,
    leaves: list[LeafSnapshot],
    queriers: list[QuerierSnapshot] = (),  # type: ignore[assignment]
    tenants: list[TenantSnapshot] = (),  # type: ignore[assignment]
) -> QueueSnapshot:
    return QueueSnapshot(
        taken_at=taken_at,
        layout="tenant-querier-component",
        component_selection="round-robin",
        total=sum(leaf.length for leaf in leaves),
        leaves=tuple(leaves),
        tenants=tuple(tenants),
        queriers=tuple(queriers),
    )


def peer(
    replica: str, snap: QueueSnapshot, *, published: float, stats: dict[str, Any] | None = None
) -> PeerSummary:
    """A summary as it would arrive over Redis: encoded to JSON and parsed back."""
    raw = summarize(snap, replica=replica, wall_time=published, stats=stats)
    return PeerSummary.parse(json.loads(json.dumps(raw)))


def encoded(replica: str, published: float) -> bytes:
    raw = summarize(snapshot(1.0, []), replica=replica, wall_time=published, stats=None)
    return json.dumps(raw).encode()
