"""What one inspector tick yields, before any browser is involved.

A `Tick` is one runtime snapshot aggregated once (`SnapshotIndex`), with its
sections (header, tree, queriers, frontends, longest running, drill pages)
serialised on first use and cached per view parameters, so every viewer with
the same parameters shares one string per tick. `ChartHistory` is the series
ticks add a point to (`chart_point`) for the inspector's chart. Which browser
is sent what, and when, is `dashboard.live`.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from api.cluster.replicas import MergedView
from api.wire.frontends import FrontendRow
from dashboard.drill import DrillBudget, DrillParams
from dashboard.frontend_view import build_frontends, build_merged_frontends, local_frontends
from dashboard.projections import SnapshotIndex, ViewParams, build_header, build_tree
from dashboard.querier_view import build_queriers
from dashboard.snapshot_summaries import longest_running, stuck_summary
from dashboard.wire import dumps, frontends_to_wire, queriers_to_wire, tree_to_wire
from scheduler_core.snapshot import QueueSnapshot

__all__ = [
    "CHART_POINTS",
    "CHART_SECONDS",
    "TICK_SECONDS",
    "ChartHistory",
    "Tick",
    "chart_point",
    "oldest_queued",
]

TICK_SECONDS = 0.25  # the cadence while ticks are cheap; `dashboard.live` stretches it
CHART_POINTS = 300  # five minutes at one point per second
CHART_SECONDS = 1.0


class Tick:
    """One snapshot, aggregated once, with serialised sections cached per view."""

    def __init__(
        self,
        number: int,
        snapshot: QueueSnapshot,
        stats: Mapping[str, Any] | None,
        interval: float = TICK_SECONDS,
        wall_time: float | None = None,
        replicas: MergedView | None = None,
        frontends: Sequence[FrontendRow] = (),
        stuck_threshold: float | None = None,
        config_version: int | None = None,
        drill_source: Callable[[DrillParams, DrillBudget], Any] | None = None,
        replicas_down: Sequence[str] = (),
        drill_budget: DrillBudget | None = None,
    ) -> None:
        self.number = number
        self.wall_time = time.time() if wall_time is None else wall_time
        self.index = SnapshotIndex.build(snapshot)
        self.replicas = replicas
        header = build_header(self.index, stats)
        header["interval"] = interval
        if replicas is not None:
            header["replicas"] = replicas.header()
        if replicas_down:
            header["replicas_down"] = list(replicas_down)
        if stuck_threshold is not None:
            header["stuck"] = stuck_summary(snapshot, stuck_threshold)
        if config_version is not None:
            header["config_version"] = config_version
        self.header = dumps(header)
        owners = replicas.querier_replicas if replicas is not None else None
        self.longest = dumps(longest_running(snapshot, owners, self.wall_time))
        self._drill_source = drill_source
        # One drill page per distinct drill and tick, shared by its viewers;
        # the pages that read query text share one budget of it per tick.
        self._drills: dict[DrillParams, Any] = {}
        self._drill_budget = drill_budget if drill_budget is not None else DrillBudget()
        self.frontend_rows = tuple(frontends)
        self._queriers: str | None = None
        self._frontends_panel: dict[str, Any] | None = None
        self._frontends: str | None = None
        self._trees: dict[ViewParams, str] = {}

    @property
    def queriers(self) -> str:
        if self._queriers is None:
            owners = self.replicas.querier_replicas if self.replicas is not None else None
            panel = build_queriers(self.index.snapshot, owners)
            self._queriers = dumps(queriers_to_wire(panel))
        return self._queriers

    @property
    def frontends_panel(self) -> dict[str, Any]:
        if self._frontends_panel is None:
            merged = self.replicas
            if merged is None:
                self._frontends_panel = build_frontends(self.frontend_rows)
            else:
                local = local_frontends(merged.local, self.frontend_rows)
                self._frontends_panel = build_merged_frontends(
                    local, merged.peer_frontends, merged.frontends_missing
                )
        return self._frontends_panel

    @property
    def frontends(self) -> str:
        if self._frontends is None:
            self._frontends = dumps(frontends_to_wire(self.frontends_panel))
        return self._frontends

    def tree(self, params: ViewParams) -> str:
        cached = self._trees.get(params)
        if cached is None:
            cached = self._trees[params] = dumps(tree_to_wire(build_tree(self.index, params)))
        return cached

    def sections(self, params: ViewParams) -> dict[str, str]:
        return {
            "header": self.header,
            "tree": self.tree(params),
            "queriers": self.queriers,
            "frontends": self.frontends,
            "longest": self.longest,
        }

    def drill_page(self, params: DrillParams) -> Any:
        """The drill page for these params this tick (None without a local runtime)."""
        if params not in self._drills:
            source = self._drill_source
            budget = self._drill_budget
            self._drills[params] = source(params, budget) if source is not None else None
        return self._drills[params]


class ChartHistory:
    """The last `CHART_POINTS` points of [time, queued, oldest wait, p50, p99]."""

    def __init__(self) -> None:
        self._points: deque[list[Any]] = deque(maxlen=CHART_POINTS)
        self.end = 0  # absolute index one past the newest point

    @property
    def last_time(self) -> float:
        return float(self._points[-1][0]) if self._points else float("-inf")

    def append(self, point: list[Any]) -> None:
        self._points.append(point)
        self.end += 1

    def since(self, start: int) -> list[list[Any]]:
        first = self.end - len(self._points)
        return list(self._points)[max(start, first) - first :]


def chart_point(
    wall_time: float,
    snapshot: QueueSnapshot,
    oldest_enqueued_at: float | None,
    stats: Mapping[str, Any] | None,
    config_version: int | None = None,
) -> list[Any]:
    """A point for `ChartHistory`: [time, queued, oldest wait, p50, p99, config version].

    The config version the scheduler ran at that second (None if unknown) is
    what the charts mark a change of: "what changed?" next to what the
    queue did.
    """
    wait = (
        None
        if oldest_enqueued_at is None
        else round(max(0.0, snapshot.taken_at - oldest_enqueued_at), 2)
    )
    waits = (stats or {}).get("wait") or {}
    return [
        round(wall_time, 1),
        snapshot.total,
        wait,
        waits.get("p50"),
        waits.get("p99"),
        config_version,
    ]


def oldest_queued(snapshot: QueueSnapshot) -> float | None:
    """When the snapshot's oldest queued request arrived (None: nothing queued).

    What a tick reads from its index (`all_tenants`), for a point taken
    without one.
    """
    heads = [leaf.oldest_enqueued_at for leaf in snapshot.leaves]
    return min((at for at in heads if at is not None), default=None)
