"""Queue snapshot → the inspector's view model, in either tree projection.

Pure functions over `scheduler_core.snapshot.QueueSnapshot`, no Django: the
live consumer, the first server-rendered page and the tests all build the
same view. The work is split in two so that many browsers cost little:
`SnapshotIndex` (`dashboard.snapshot_index`, also importable from here)
aggregates a snapshot once per tick (per-tenant and per-component totals,
sorted by depth), and `build_tree` then filters and pages it for one
browser's parameters. A page is bounded (`MAX_PAGE_SIZE`
tenants per parent plus one "others" row), so a browser watching 10,000
tenants receives about what it would for 50.

The projection a browser picks is independent of the layout the scheduler
runs: both are views of the same leaves, (tenant, component) queues.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from dashboard.actor_nodes import actor_nodes
from dashboard.querier_view import reserved_idle
from dashboard.snapshot_index import Aggregate, LeavesOf, Rank, SnapshotIndex, merge
from scheduler_core.model import COMPONENTS, UNKNOWN
from scheduler_core.snapshot import LeafSnapshot

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "PROJECTIONS",
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


def _component_leaf(row: Rank) -> Sequence[LeafSnapshot]:
    return (row[2],)


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


def _matching(rows: list[Rank], needle: str) -> list[Rank]:
    if not needle:
        return rows
    folded = needle.casefold()
    return [r for r in rows if folded in r[0].casefold()]


def _page(
    rows: list[Rank], params: ViewParams, total: Aggregate | None, leaves_of: LeavesOf
) -> tuple[list[Rank], Aggregate | None, int]:
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
        others = merge("others", (leaf for r in outside for leaf in leaves_of(r)))
    else:
        others = _subtract(total, shown, outside, leaves_of)
    return shown, others, rest


def _subtract(
    total: Aggregate, shown: list[Rank], outside: tuple[Rank, ...], leaves_of: LeavesOf
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
            agg = merge(leaf.component, [leaf])
            # Collapsed, a leaf with actors says only that it has children.
            fanout = len(actors) or (1 if leaf.actors else 0)
            children.append(_node("component", leaf_key, agg, now, children=actors, fanout=fanout))
        agg = merge(row[0], leaves)
        nodes.append(_node("tenant", key, agg, now, children=children, fanout=len(leaves)))
    nodes += _others_node("t", others, rest, now)
    return {
        "nodes": nodes,
        "matching": len(matching),
        "page": params.page,
        "pages": _pages(len(matching), params),
    }


def _listed_components(index: SnapshotIndex) -> tuple[str, ...]:
    """The component-first tree's top level, in `COMPONENTS` order.

    The three components a request's data-select range picks are always
    listed, so one with nothing queued reads 0 where it always stands.
    `unknown` holds the requests with no such range (mostly an expression
    that does not parse, which the querier answers 400): rare, and no
    component a query reads, so it is listed only while it holds some,
    where a row is worth a look rather than an empty "unknown 0" on every
    screen.
    """
    if index.components[UNKNOWN].length:
        return COMPONENTS
    return tuple(c for c in COMPONENTS if c != UNKNOWN)


def _component_first(index: SnapshotIndex, params: ViewParams, now: float) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = []
    matchings = {
        c: _matching(index.component_rows(c), params.search) for c in _listed_components(index)
    }
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
                agg = merge(r[0], (leaf,))
                children.append(_node("tenant", leaf_key, agg, now, children=actors, fanout=fanout))
            children += _others_node(key, others, rest, now)
        if params.search:
            shown = merge(component, (r[2] for r in matching))
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


# The "Querier time" panel's rows: static/dashboard/usage.js lists what the header carries.
USAGE_PANEL_ROWS = 10


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
        # Queriers, not connections: merged across replicas, a querier
        # connected to every replica has a row on each (the panel shows them
        # side by side, and names a reserved idle one once, as here).
        "queriers": len({q.querier_id for q in snap.queriers if q.connected}),
        "workers_busy": busy,
        "workers_total": len(workers),
        "reserved_idle": len(
            {q.querier_id for q in snap.queriers if reserved_idle(q, snap.taken_at)}
        ),
    }
    if stats:
        header["stats"] = dict(stats)
        usage = stats.get("usage")
        if usage:
            # The panel's rows only: the block carries the 50 peers merge.
            header["stats"]["usage"] = {**usage, "tenants": usage["tenants"][:USAGE_PANEL_ROWS]}
    return header
