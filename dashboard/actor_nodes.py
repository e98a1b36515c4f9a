"""A leaf's actor sub-queues as inspector tree nodes (for `dashboard.projections`).

Apart from projections.py to keep it readable; the caller hands in its own
node builder and aggregate type, so both projections build actor nodes alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scheduler_core.snapshot import LeafSnapshot

__all__ = ["actor_nodes"]

NodeOf = Callable[..., dict[str, Any]]


def actor_nodes(
    key: str, leaf: LeafSnapshot, now: float, node_of: NodeOf, aggregate: Any
) -> list[dict[str, Any]]:
    """A leaf's actor sub-queues as nested nodes (the snapshot already capped them).

    Rows come parents first; each hangs under its parent's node. Keys follow
    the wire's rule (`<parent>/a:<name>`, `<parent>/others`, `<leaf>/own`),
    so the browser derives them. The leaf's own requests (no actor path) are
    one "own" node, so the children add up to the leaf.
    """
    if not leaf.actors:
        return []
    top: list[dict[str, Any]] = []
    by_path: dict[tuple[str, ...], dict[str, Any]] = {}
    for actor in leaf.actors:
        parent = actor.path[:-1]
        above = by_path[parent] if parent else None
        siblings = above["children"] if above is not None else top
        parent_key = above["key"] if above is not None else key
        if actor.others:
            agg = aggregate("others", actor.length, (), actor.oldest_enqueued_at)
            node = node_of("actor-others", f"{parent_key}/others", agg, now, count=actor.others)
        else:
            agg = aggregate(actor.path[-1], actor.length, (), actor.oldest_enqueued_at)
            node = node_of("actor", f"{parent_key}/a:{actor.path[-1]}", agg, now)
            by_path[actor.path] = node
        siblings.append(node)
        if above is not None:
            above["fanout"] = len(siblings)
    own = leaf.length - sum(n["length"] for n in top)
    if own > 0:
        top.insert(0, node_of("own", f"{key}/own", aggregate("(no actor)", own, (), None), now))
    return top
