"""What the inspector's header and its longest-running list read from a queue snapshot.

Not the drill-down's live queue walk (`dashboard.drill`): both come from the
tick's `QueueSnapshot`, one pass over its leaves or its queriers' workers.
`stuck_summary` counts the leaves whose oldest request waited past the stuck
threshold and names the one holding the oldest queued request (the header's
"Oldest queued request" link opens that leaf's drill-down);
`longest_running` lists the `LONGEST_ROWS` requests running longest.
"""

from __future__ import annotations

from typing import Any

from scheduler_core.snapshot import QueueSnapshot

__all__ = ["LONGEST_ROWS", "longest_running", "stuck_summary"]

LONGEST_ROWS = 10


def longest_running(snapshot: QueueSnapshot, owners: list[str] | None, wall: float) -> list[Any]:
    """The `LONGEST_ROWS` longest-running requests across every querier (from the snapshot).

    Rows: [request id, tenant, component, priority, querier, worker, running
    since (wall clock), replica or None].
    """
    offset = wall - snapshot.taken_at
    busy = []
    replicas = owners if owners is not None else [None] * len(snapshot.queriers)
    for querier, owner in zip(snapshot.queriers, replicas, strict=False):
        for w in querier.workers:
            if w.request_id is not None:
                busy.append((w.since, w, querier.querier_id, owner))
    busy.sort(key=lambda item: (item[0], item[1].request_id))
    return [
        [
            w.request_id,
            w.tenant_id,
            w.component,
            w.priority,
            querier_id,
            w.worker_id,
            round(since + offset, 1),
            owner,
        ]
        for since, w, querier_id, owner in busy[:LONGEST_ROWS]
    ]


def stuck_summary(snapshot: QueueSnapshot, threshold: float) -> dict[str, Any]:
    """Leaves (and tenants) whose oldest request waited longer than `threshold`, and the oldest.

    `oldest` names the tenant and component holding the oldest queued
    request (the inspector links to that leaf's drill-down).
    """
    now = snapshot.taken_at
    stuck_leaves = 0
    tenants: set[str] = set()
    oldest: Any = None
    for leaf in snapshot.leaves:
        if leaf.length <= 0:
            continue
        if oldest is None or leaf.oldest_enqueued_at < oldest.oldest_enqueued_at:
            oldest = leaf
        if now - leaf.oldest_enqueued_at > threshold:
            stuck_leaves += 1
            tenants.add(leaf.tenant_id)
    summary: dict[str, Any] = {
        "threshold": threshold,
        "leaves": stuck_leaves,
        "tenants": len(tenants),
        "oldest": None,
    }
    if oldest is not None:
        summary["oldest"] = {
            "tenant": oldest.tenant_id,
            "component": oldest.component,
            "wait": round(max(0.0, now - oldest.oldest_enqueued_at), 1),
        }
    return summary
