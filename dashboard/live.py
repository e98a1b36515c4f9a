"""The per-process broadcaster of live inspector views.

One `Broadcaster` per process ticks at `TICK_SECONDS` while any inspector is
open: it takes one runtime snapshot, aggregates it once (a `Tick`), and
hands every `Viewer` a frame built for its own view parameters (identical
parameters share one built, serialised tree per tick). Nothing here ever
awaits a browser: a viewer whose last send has not finished, or which has not
acknowledged recent frames (`ACK_WINDOW`), simply skips ticks. A skipped tick
is not a gap: each update carries the sections that changed since the last
frame that viewer *was sent*, and `seq` counts sent frames, so the client
sees a gap only if a frame really went missing, and then asks for a resync.

What a tick holds (`Tick`, the chart's `ChartHistory`) is `dashboard.live_tick`,
one browser's frame state (`Viewer`) `dashboard.live_viewer`; their names are
re-exported here, the one place the live view is imported from.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from dashboard.drill import DrillBudget, DrillCounts
from dashboard.live_tick import (
    CHART_POINTS,
    CHART_SECONDS,
    TICK_SECONDS,
    ChartHistory,
    Tick,
    chart_point,
    oldest_queued,
)
from dashboard.live_viewer import ACK_WINDOW, EPOCH, Viewer
from dashboard.runtime_source import RuntimeSource
from scheduler_core.snapshot import QueueSnapshot

__all__ = [
    "ACK_WINDOW",
    "CHART_POINTS",
    "CHART_SECONDS",
    "LOOP_BUDGET",
    "EPOCH",
    "HISTORY_BUDGET",
    "TICK_SECONDS",
    "Broadcaster",
    "ChartHistory",
    "SnapshotSource",
    "Tick",
    "Viewer",
    "get_broadcaster",
    "install_broadcaster",
    "keep_history",
]

log = logging.getLogger(__name__)

# Share of the event loop the broadcaster may use: when a tick (snapshot,
# views, drill pages) and the frames it sent cost more than this share of
# TICK_SECONDS, the cadence stretches so that a huge queue slows the
# inspector, never the scheduler on the same loop. At 0.1, with the sends
# left out, 20 inspectors of 10,000 tenants took 10-13% of the dispatch rate.
LOOP_BUDGET = 0.05
# Share of the loop the chart's history may take while no tick adds its
# points (no inspector open, or every one paused): a point a second costs a
# snapshot, so at 10,000 tenants the points come further apart instead.
HISTORY_BUDGET = 0.01


class SnapshotSource(Protocol):
    """Where the broadcaster reads the queue: the runtime host, or a test fake."""

    def snapshot(self) -> QueueSnapshot | None: ...

    def stats(self) -> Mapping[str, Any] | None: ...

    # Optional, read with getattr: `replicas() -> MergedView | None` (scale-out,
    # with the peers' frontends), `frontends() -> Sequence[FrontendRow]`
    # (this replica's own frontends), `stuck_threshold() -> float`,
    # `config_version() -> int | None` (the version the scheduler runs, which
    # the chart points carry) and `drill_page(DrillParams, DrillBudget) ->
    # page | None` (the drill-down, dashboard.drill; the budget is the
    # tick's, shared by its drill pages).


class Broadcaster:
    """Ticks while viewers are registered; `tick()` may also be driven by tests."""

    def __init__(
        self,
        source: SnapshotSource | None = None,
        *,
        autostart: bool = True,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._source = source
        self._wall_clock = wall_clock
        self._autostart = autostart
        self.viewers: set[Viewer] = set()
        self.chart = ChartHistory()
        self.current: Tick | None = None
        self.ticks = 0
        self.interval = TICK_SECONDS
        # Loop seconds its ticks, their frames and the chart's own points
        # took, ever (what `queue_inspector_live_loop_seconds_total` reports).
        self.loop_seconds = 0.0
        # Text drills' counts, kept from tick to tick so they converge over a
        # node bigger than a tick's share (dashboard.drill_scan.DrillCounts).
        self.drill_counts = DrillCounts()
        self._task: asyncio.Task[None] | None = None

    def source(self) -> SnapshotSource | None:
        if self._source is None:
            self._source = _runtime_source()
        return self._source

    def register(self, viewer: Viewer) -> None:
        self.viewers.add(viewer)
        if self._autostart and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(self._run())

    def unregister(self, viewer: Viewer) -> None:
        self.viewers.discard(viewer)

    def latest(self) -> Tick | None:
        """The running loop's current tick, else a fresh one (taken on this loop)."""
        running = self._task is not None and not self._task.done()
        current = self.current
        fresh = current is not None and self._wall_clock() - current.wall_time < 2 * self.interval
        if running and current is not None and fresh:
            return current
        return self._take()

    def _take(self) -> Tick | None:
        source = self.source()
        snapshot = source.snapshot() if source is not None else None
        if snapshot is None:
            return None
        stats = source.stats() if source is not None else None
        # Optional on the protocol: only a scale-out source has replicas.
        replicas_of = getattr(source, "replicas", None)
        replicas = replicas_of() if replicas_of is not None else None
        frontends_of = getattr(source, "frontends", None)
        frontends = frontends_of() if frontends_of is not None else ()
        threshold_of = getattr(source, "stuck_threshold", None)
        threshold = threshold_of() if threshold_of is not None else None
        drill_source = getattr(source, "drill_page", None)
        down_of = getattr(source, "replicas_down", None)
        version = _config_version(source)
        # The drills this tick may build pages for (forced frames included),
        # so each gets an equal share of the tick's text budget at least.
        # Their kept counts are kept, no others: a drill closed (or paused)
        # on every viewer drops its count.
        open_drills = [
            v.drill.params
            for v in self.viewers
            if v.drill is not None and v.subscribed and not v.paused
        ]
        self.drill_counts.keep(open_drills)
        self.ticks += 1
        wall = self._wall_clock()
        tick = Tick(
            self.ticks,
            snapshot,
            stats,
            self.interval,
            wall,
            replicas,
            frontends,
            stuck_threshold=threshold,
            drill_source=drill_source,
            config_version=version,
            replicas_down=down_of() if down_of is not None else (),
            drill_budget=DrillBudget.for_drills(open_drills, counts=self.drill_counts),
        )
        if tick.wall_time - self.chart.last_time >= CHART_SECONDS:
            oldest = tick.index.all_tenants.oldest_enqueued_at
            self.chart.append(chart_point(wall, snapshot, oldest, stats, version))
        self.current = tick
        return tick

    def tick(self) -> Tick | None:
        """Take a snapshot and offer every viewer its frame.

        When no viewer could take a frame (all paused or behind on acks) the
        snapshot is not even taken: slow browsers then cost the scheduler
        nothing at all.
        """
        ready = [v for v in self.viewers if v.ready()]
        if not ready:
            for viewer in self.viewers:
                viewer.dropped += int(viewer.subscribed and not viewer.paused)
            return None
        tick = self._take()
        if tick is not None:
            for viewer in list(self.viewers):
                viewer.offer(tick, self.chart)
        return tick

    def send_now(self, viewer: Viewer) -> None:
        """Answer a subscribe, resync or drill at once rather than at the next tick.

        Not while the viewer is `ACK_WINDOW` frames behind: each such frame
        may be a full one (~180 KB on a big queue), and a socket that sent
        thousands and never read made the server buffer them all. Any number
        of them are `owed` as one frame, sent once the viewer acks (`caught_up`).
        """
        if viewer.behind():
            viewer.owed = True
            return
        tick = self.latest()
        if tick is not None:
            viewer.offer(tick, self.chart, force=True)

    def caught_up(self, viewer: Viewer) -> None:
        """After an ack: the frame a subscribe, resync or drill asked for, if still owed."""
        if viewer.owed and not viewer.behind():
            self.send_now(viewer)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while self.viewers:
            started = loop.time()
            try:
                self.tick()
            except Exception:
                log.exception("inspector broadcast tick failed")
            cost = loop.time() - started + self._sends_cost()
            self.loop_seconds += cost
            self.interval = max(TICK_SECONDS, round(cost / LOOP_BUDGET, 2))
            # A fixed cadence, not a fixed pause: a slow tick does not slow the rate.
            next_at = max(next_at + self.interval, loop.time())
            await asyncio.sleep(next_at - loop.time())
        self.current = None

    def sample_history(self) -> float:
        """Add a chart point unless a tick added one lately; the seconds it took.

        Ticks only run while an inspector is open and not paused, so without
        this the chart would start empty on opening and show a straight line
        across the minutes nobody watched.
        """
        # Nine tenths: a sleep of a second may wake a little early.
        if self._wall_clock() - self.chart.last_time < 0.9 * CHART_SECONDS:
            return 0.0
        started = time.perf_counter()
        source = self.source()
        snapshot = source.snapshot() if source is not None else None
        if source is not None and snapshot is not None:
            point = chart_point(
                self._wall_clock(),
                snapshot,
                oldest_queued(snapshot),
                source.stats(),
                _config_version(source),
            )
            self.chart.append(point)
        cost = time.perf_counter() - started
        self.loop_seconds += cost
        return cost

    def _sends_cost(self) -> float:
        """The viewers' send time since the last call (frames of earlier ticks)."""
        spent = 0.0
        for viewer in self.viewers:
            spent += viewer.send_seconds
            viewer.send_seconds = 0.0
        return spent


def _config_version(source: SnapshotSource) -> int | None:
    version_of = getattr(source, "config_version", None)
    return version_of() if version_of is not None else None


async def keep_history() -> None:
    """The chart's points while no tick adds them; runs beside the runtime.

    Reads the process's broadcaster on every pass, so one a test installs
    takes over at once.
    """
    while True:
        cost = get_broadcaster().sample_history()
        await asyncio.sleep(max(CHART_SECONDS, cost / HISTORY_BUDGET))


def _runtime_source() -> SnapshotSource:
    return RuntimeSource()


_instance: Broadcaster | None = None


def get_broadcaster() -> Broadcaster:
    """The process's broadcaster, created on first use."""
    global _instance
    if _instance is None:
        _instance = Broadcaster()
    return _instance


def install_broadcaster(broadcaster: Broadcaster | None) -> None:
    """Replace the process's broadcaster (tests install one on a fake source)."""
    global _instance
    _instance = broadcaster
