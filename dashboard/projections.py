"""Queue snapshot → the inspector's view model, in either tree projection.

Pure functions over `scheduler_core.snapshot.QueueSnapshot`, no Django: the
live consumer, the first server-rendered page and the tests all build the
same view. The work is split in two so that many browsers cost little:
`SnapshotIndex` aggregates a snapshot once per tick (per-tenant and
per-component totals, sorted by depth), and `build_tree` then filters and
pages it for one browser's parameters. A page is bounded (`MAX_PAGE_SIZE`
tenants per parent plus one "others" row), so a browser watching 10,000
tenants receives about what it would for 50.

The projection a browser picks is independent of the layout the scheduler
runs: both are views of the same leaves, (tenant, component) queues.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from operator import itemgetter
from typing import Any, NamedTuple

from dashboard.actor_nodes import actor_nodes
from dashboard.querier_view import reserved_idle
from scheduler_core.model import COMPONENTS
from scheduler_core.snapshot import LeafSnapshot, QueueSnapshot

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "PROJECTIONS",
    "Aggregate",
    "InvalidViewParams",
    "SnapshotIndex",
    "ViewParams",
    "build_header",
    "build_tree",
]

PROJECTIONS = ("tenant-first", "component-first")
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 200
MAX_SEARCH_LENGTH = 256
MAX_EXPANDED = 400


class InvalidViewParams(ValueError):
    """A browser asked for a projection, page or page size that does not exist."""


@dataclass(frozen=True, slots=True)
class ViewParams:
    """What one browser watches; equal params share one built view per tick."""

    projection: str = "tenant-first"
    search: str = ""
    page: int = 0
    page_size: int = DEFAULT_PAGE_SIZE
    # Keys of the nodes the browser has open: only their children are sent,
    # so a collapsed tree of 50 tenants costs 50 rows, not 50 times 4.
    expanded: frozenset[str] = frozenset()

    @classmethod
    def from_message(cls, raw: Mapping[str, Any]) -> ViewParams:
        """Params from a subscribe message; missing keys take their defaults."""
        projection = raw.get("projection", "tenant-first")
        if projection not in PROJECTIONS:
            raise InvalidViewParams(f"projection must be one of {', '.join(PROJECTIONS)}")
        search = raw.get("search", "")
        if not isinstance(search, str) or len(search) > MAX_SEARCH_LENGTH:
            raise InvalidViewParams(f"search must be a string of at most {MAX_SEARCH_LENGTH}")
        page = _bounded_int(raw.get("page", 0), "page", 0, 1_000_000)
        size = _bounded_int(raw.get("page_size", DEFAULT_PAGE_SIZE), "page_size", 1, MAX_PAGE_SIZE)
        expanded = raw.get("expanded", [])
        if (
            not isinstance(expanded, list)
            or len(expanded) > MAX_EXPANDED
            or not all(isinstance(k, str) and len(k) <= 600 for k in expanded)
        ):
            raise InvalidViewParams(f"expanded must be a list of at most {MAX_EXPANDED} node keys")
        return cls(projection, search.strip(), page, size, frozenset(expanded))

    def as_dict(self) -> dict[str, Any]:
        return {
            "projection": self.projection,
            "search": self.search,
            "page": self.page,
            "page_size": self.page_size,
            "expanded": sorted(self.expanded),
        }


def _bounded_int(value: object, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidViewParams(f"{name} must be an integer from {low} to {high}")
    return value


class Aggregate(NamedTuple):
    """Queued work of one node: total, split by priority (highest first), oldest."""

    key: str
    length: int
    by_priority: tuple[tuple[int, int], ...]
    oldest_enqueued_at: float | None


def _merge(key: str, parts: Iterable[Aggregate | LeafSnapshot]) -> Aggregate:
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
_Rank = tuple[Any, ...]
_LeavesOf = Callable[[_Rank], Sequence[LeafSnapshot]]
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
        self.components = {c: _merge(c, ls) for c, ls in component_leaves.items()}
        self.all_tenants = _merge("*", self.components.values())
        self._tenant_rows: list[_Rank] | None = None
        self._component_rows: dict[str, list[_Rank]] = {}

    @classmethod
    def build(cls, snapshot: QueueSnapshot) -> SnapshotIndex:
        return cls(snapshot)

    @property
    def tenants_queued(self) -> int:
        return len(self.tenant_leaves)

    def tenant_rows(self) -> list[_Rank]:
        """(tenant, length) of tenants with queued work, deepest first (ties by ID)."""
        if self._tenant_rows is None:
            self._tenant_rows = _by_depth(list(self._lengths.items()))
        return self._tenant_rows

    def tenant_leaves_of(self, row: _Rank) -> Sequence[LeafSnapshot]:
        return self.tenant_leaves[row[0]]

    def component_rows(self, component: str) -> list[_Rank]:
        """(tenant, length, leaf) of one component's leaves, deepest first (ties by ID)."""
        rows = self._component_rows.get(component)
        if rows is None:
            leaves = self.component_leaves.get(component, [])
            rows = _by_depth([(leaf.tenant_id, leaf.length, leaf) for leaf in leaves])
            self._component_rows[component] = rows
        return rows


def _component_leaf(row: _Rank) -> Sequence[LeafSnapshot]:
    return (row[2],)


def _by_depth(rows: list[_Rank]) -> list[_Rank]:
    """Deepest first, ties by ID: two C-level stable sorts instead of a key lambda.

    `reverse=True` keeps equal lengths in their ID order (sort stability is
    preserved under reverse), which is what `(-length, id)` ordering means.
    """
    rows.sort(key=_KEY)
    rows.sort(key=_BY_LENGTH, reverse=True)
    return rows


_KEY = itemgetter(0)


def _wait(now: float, oldest: float | None) -> float | None:
    return None if oldest is None else round(max(0.0, now - oldest), 1)


def _node(kind: str, key: str, agg: Aggregate, now: float, **extra: Any) -> dict[str, Any]:
    node: dict[str, Any] = {
        "kind": kind,
        "key": key,
        "name": agg.key,
        "length": agg.length,
        "by_priority": [list(pair) for pair in agg.by_priority],
        "oldest_wait": _wait(now, agg.oldest_enqueued_at),
    }
    node.update(extra)
    node.setdefault("children", [])
    if kind not in ("others", "actor-others"):
        node.setdefault("fanout", 0)
    return node


def _matching(rows: list[_Rank], needle: str) -> list[_Rank]:
    if not needle:
        return rows
    folded = needle.casefold()
    return [r for r in rows if folded in r[0].casefold()]


def _page(
    rows: list[_Rank], params: ViewParams, total: Aggregate | None, leaves_of: _LeavesOf
) -> tuple[list[_Rank], Aggregate | None, int]:
    """This page's rows and an "others" aggregate of every matching row not on it.

    `total` is the precomputed sum of `rows` when known (no search), so the
    common case subtracts one page instead of merging thousands of tenants.
    """
    start = params.page * params.page_size
    shown = rows[start : start + params.page_size]
    rest = len(rows) - len(shown)
    if rest <= 0:
        return shown, None, 0
    outside = (*rows[:start], *rows[start + params.page_size :])
    if total is None:
        others = _merge("others", (leaf for r in outside for leaf in leaves_of(r)))
    else:
        others = _subtract(total, shown, outside, leaves_of)
    return shown, others, rest


def _subtract(
    total: Aggregate, shown: list[_Rank], outside: tuple[_Rank, ...], leaves_of: _LeavesOf
) -> Aggregate:
    counts = dict(total.by_priority)
    oldest = total.oldest_enqueued_at
    oldest_shown = False
    for row in shown:
        for leaf in leaves_of(row):
            oldest_shown = oldest_shown or leaf.oldest_enqueued_at == oldest
            for priority, count in leaf.by_priority:
                counts[priority] -= count
    by_priority = tuple(sorted(((p, c) for p, c in counts.items() if c > 0), reverse=True))
    if oldest_shown:
        # Only then can the outside rows' oldest differ from the total's
        # (the total's minimum is some leaf's value, exactly).
        oldest = min(
            (leaf.oldest_enqueued_at for r in outside for leaf in leaves_of(r)),
            default=None,
        )
    length = total.length - sum(r[1] for r in shown)
    return Aggregate("others", length, by_priority, oldest)


def _others_node(
    parent: str, others: Aggregate | None, count: int, now: float
) -> list[dict[str, Any]]:
    if others is None:
        return []
    return [_node("others", f"{parent}/others", others, now, count=count)]


def _tenant_first(index: SnapshotIndex, params: ViewParams, now: float) -> dict[str, Any]:
    matching = _matching(index.tenant_rows(), params.search)
    params = _on_a_page(params, len(matching))
    total = index.all_tenants if not params.search else None
    leaves_of = index.tenant_leaves_of
    rows, others, rest = _page(matching, params, total, leaves_of)
    nodes = []
    for row in rows:
        key = f"t:{row[0]}"
        leaves = leaves_of(row)
        children = []
        for leaf in leaves if key in params.expanded else ():
            leaf_key = f"{key}/{leaf.component}"
            actors = (
                actor_nodes(leaf_key, leaf, now, _node, Aggregate)
                if leaf_key in params.expanded
                else []
            )
            agg = _merge(leaf.component, [leaf])
            # Collapsed, a leaf with actors says only that it has children.
            fanout = len(actors) or (1 if leaf.actors else 0)
            children.append(_node("component", leaf_key, agg, now, children=actors, fanout=fanout))
        agg = _merge(row[0], leaves)
        nodes.append(_node("tenant", key, agg, now, children=children, fanout=len(leaves)))
    nodes += _others_node("t", others, rest, now)
    return {
        "nodes": nodes,
        "matching": len(matching),
        "page": params.page,
        "pages": _pages(len(matching), params),
    }


def _component_first(index: SnapshotIndex, params: ViewParams, now: float) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = []
    matchings = {c: _matching(index.component_rows(c), params.search) for c in COMPONENTS}
    most = max(len(m) for m in matchings.values())
    params = _on_a_page(params, most)
    for component, matching in matchings.items():
        total = index.components[component] if not params.search else None
        key = f"c:{component}"
        children: list[dict[str, Any]] = []
        if key in params.expanded:
            rows, others, rest = _page(matching, params, total, _component_leaf)
            children = []
            for r in rows:
                leaf_key = f"{key}/{r[0]}"
                leaf = r[2]
                actors = (
                    actor_nodes(leaf_key, leaf, now, _node, Aggregate)
                    if leaf_key in params.expanded
                    else []
                )
                fanout = len(actors) or (1 if leaf.actors else 0)
                agg = _merge(r[0], (leaf,))
                children.append(_node("tenant", leaf_key, agg, now, children=actors, fanout=fanout))
            children += _others_node(key, others, rest, now)
        if params.search:
            shown = _merge(component, (r[2] for r in matching))
        else:
            shown = index.components[component]
        nodes.append(_node("component", key, shown, now, children=children, fanout=len(matching)))
    return {"nodes": nodes, "matching": most, "page": params.page, "pages": _pages(most, params)}


def _pages(matching: int, params: ViewParams) -> int:
    return max(1, -(-matching // params.page_size))


def _on_a_page(params: ViewParams, matching: int) -> ViewParams:
    """`params` on its last page when it asks for one past the end.

    A bookmarked `?page=7`, or a page that emptied as tenants drained,
    shows the last rows there are rather than "page 8 of 1" and no rows.
    """
    last = _pages(matching, params) - 1
    return params if params.page <= last else replace(params, page=last)


def build_tree(index: SnapshotIndex, params: ViewParams) -> dict[str, Any]:
    """The paged, filtered tree for one browser.

    Tenant nodes are ordered by depth (then ID), so page 0 holds the top
    tenants; the "others" row sums every matching tenant not on the page.
    """
    now = index.snapshot.taken_at
    if params.projection == "component-first":
        tree = _component_first(index, params, now)
    else:
        tree = _tenant_first(index, params, now)
    tree["projection"] = params.projection
    return tree


def build_header(index: SnapshotIndex, stats: Mapping[str, Any] | None) -> dict[str, Any]:
    """Header figures: totals from the snapshot, rates and waits from `stats`."""
    snap = index.snapshot
    workers = [w for q in snap.queriers for w in q.workers]
    busy = sum(1 for w in workers if w.request_id is not None)
    header: dict[str, Any] = {
        "layout": snap.layout,
        "component_selection": snap.component_selection,
        "total": snap.total,
        "tenants_queued": index.tenants_queued,
        "tenants_known": len(snap.tenants),
        "by_priority": [list(p) for p in index.all_tenants.by_priority],
        "oldest_wait": _wait(snap.taken_at, index.all_tenants.oldest_enqueued_at),
        "components": {c: index.components[c].length for c in COMPONENTS},
        "queriers": sum(1 for q in snap.queriers if q.connected),
        "workers_busy": busy,
        "workers_total": len(workers),
        "reserved_idle": sum(1 for q in snap.queriers if reserved_idle(q, snap.taken_at)),
    }
    if stats:
        header["stats"] = dict(stats)
    return header
