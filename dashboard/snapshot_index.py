"""A queue snapshot aggregated once per tick, for every browser's projection.

`SnapshotIndex` groups a snapshot's non-empty leaves by tenant and by
component in one pass and ranks them by depth on first use; `Aggregate` is
the queued work of one node and `merge` sums leaves or aggregates into one.
`dashboard.projections` pages and filters an index for each browser's view
parameters, so the work here is done once per tick however many watch.

Pure, no Django: it may import only the standard library and
`scheduler_core` (the model and snapshot types), never `api` or another
`dashboard` module (tests/test_import_direction.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter
from typing import Any, NamedTuple

from scheduler_core.model import COMPONENTS
from scheduler_core.snapshot import LeafSnapshot, QueueSnapshot

__all__ = ["Aggregate", "LeavesOf", "Rank", "SnapshotIndex", "merge"]


class Aggregate(NamedTuple):
    """Queued work of one node: total, split by priority (highest first), oldest."""

    key: str
    length: int
    by_priority: tuple[tuple[int, int], ...]
    oldest_enqueued_at: float | None


def merge(key: str, parts: Iterable[Aggregate | LeafSnapshot]) -> Aggregate:
    """The queued work of `parts` (leaves or aggregates) as one aggregate named `key`."""
    counts: dict[int, int] = {}
    length = 0
    oldest: float | None = None
    for part in parts:
        length += part.length
        for priority, count in part.by_priority:
            counts[priority] = counts.get(priority, 0) + count
        at = part.oldest_enqueued_at
        if at is not None and (oldest is None or at < oldest):
            oldest = at
    return Aggregate(key, length, tuple(sorted(counts.items(), reverse=True)), oldest)


# A ranked row: (tenant ID, its length in this scope, ...). Rows are plain
# tuples because a tick ranks every tenant with work (10,000 and more) while
# a page shows 50: the leaves of a row are looked up only for shown rows.
Rank = tuple[Any, ...]
LeavesOf = Callable[[Rank], Sequence[LeafSnapshot]]
_KEY = itemgetter(0)
_BY_LENGTH = itemgetter(1)


class SnapshotIndex:
    """One snapshot grouped for every projection; built once per tick.

    Only one pass over the leaves happens eagerly; the depth orderings of
    each projection are built on first use and shared by every view of the
    tick. Aggregates are merged only for rows a page shows, so the cost per
    view is a page, not the whole queue.
    """

    def __init__(self, snapshot: QueueSnapshot) -> None:
        self.snapshot = snapshot
        tenant_leaves: dict[str, list[LeafSnapshot]] = {}
        lengths: dict[str, int] = {}
        component_leaves: dict[str, list[LeafSnapshot]] = {c: [] for c in COMPONENTS}
        for leaf in snapshot.leaves:
            length = leaf.length
            if length <= 0:
                continue
            tenant = leaf.tenant_id
            mine = tenant_leaves.get(tenant)
            if mine is None:
                tenant_leaves[tenant] = [leaf]
                lengths[tenant] = length
            else:
                mine.append(leaf)
                lengths[tenant] += length
            bucket = component_leaves.get(leaf.component)
            if bucket is None:
                component_leaves[leaf.component] = [leaf]
            else:
                bucket.append(leaf)
        self.tenant_leaves = tenant_leaves
        self.component_leaves = component_leaves
        self._lengths = lengths
        self.components = {c: merge(c, ls) for c, ls in component_leaves.items()}
        self.all_tenants = merge("*", self.components.values())
        self._tenant_rows: list[Rank] | None = None
        self._component_rows: dict[str, list[Rank]] = {}

    @classmethod
    def build(cls, snapshot: QueueSnapshot) -> SnapshotIndex:
        return cls(snapshot)

    @property
    def tenants_queued(self) -> int:
        return len(self.tenant_leaves)

    def tenant_rows(self) -> list[Rank]:
        """(tenant, length) of tenants with queued work, deepest first (ties by ID)."""
        if self._tenant_rows is None:
            self._tenant_rows = _by_depth(list(self._lengths.items()))
        return self._tenant_rows

    def tenant_leaves_of(self, row: Rank) -> Sequence[LeafSnapshot]:
        return self.tenant_leaves[row[0]]

    def component_rows(self, component: str) -> list[Rank]:
        """(tenant, length, leaf) of one component's leaves, deepest first (ties by ID)."""
        rows = self._component_rows.get(component)
        if rows is None:
            leaves = self.component_leaves.get(component, [])
            rows = _by_depth([(leaf.tenant_id, leaf.length, leaf) for leaf in leaves])
            self._component_rows[component] = rows
        return rows


def _by_depth(rows: list[Rank]) -> list[Rank]:
    """Deepest first, ties by ID: two C-level stable sorts instead of a key lambda.

    `reverse=True` keeps equal lengths in their ID order (sort stability is
    preserved under reverse), which is what `(-length, id)` ordering means.
    """
    rows.sort(key=_KEY)
    rows.sort(key=_BY_LENGTH, reverse=True)
    return rows
