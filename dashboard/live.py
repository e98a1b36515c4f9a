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

What a tick holds (`Tick`, the chart's `ChartHistory`) is `dashboard.live_tick`;
its names are re-exported here, the one place the live view is imported from.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from api.wire.consumers.guard import CLIENT_GONE
from dashboard.drill import DrillBudget, DrillState
from dashboard.live_tick import (
    CHART_POINTS,
    CHART_SECONDS,
    TICK_SECONDS,
    ChartHistory,
    Tick,
    chart_point,
    oldest_queued,
)
from dashboard.projections import ViewParams
from dashboard.runtime_source import RuntimeSource
from dashboard.wire import dumps
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
# Frames a viewer may have unacknowledged before it starts skipping ticks.
ACK_WINDOW = 2
# Changes on every process start, so a browser that reconnects to a restarted
# server (or another replica) knows its seq numbers mean nothing any more.
EPOCH = f"{os.getpid():x}-{int(time.time() * 1000):x}"


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


class Viewer:
    """One inspector connection's frame state; `send` delivers a text frame."""

    def __init__(self, send: Callable[[str], Awaitable[None]]) -> None:
        self._send = send
        self.params = ViewParams()
        self.paused = False
        self.seq = 0
        self.acked = 0
        self.dropped = 0
        self.subscribed = False
        self._need_full = True
        # A subscribe, resync or drill asked for a frame at once while this
        # viewer was behind on acks; it goes when the viewer catches up.
        self.owed = False
        self._sent: dict[str, str] = {}
        self._chart_sent = 0  # absolute index of the next chart point to send
        self._task: asyncio.Task[None] | None = None
        # The drill-down this browser has open (dashboard.drill), if any.
        self.drill: DrillState | None = None
        # Loop-thread CPU its sends took since the broadcaster last read it.
        self.send_seconds = 0.0

    def subscribe(self, params: ViewParams) -> None:
        self.params = params
        self.subscribed = True
        self._need_full = True

    def resync(self) -> None:
        self._need_full = True

    def set_drill(self, drill: DrillState | None) -> None:
        """Opens (None: closes) the drill-down; the next frame carries its section."""
        self.drill = drill
        # A new drill starts the browser's rows afresh, so its first section goes
        # even when it is the text last sent (the same drill closed and reopened
        # before its rows were ever sent as references).
        self._sent.pop("drill", None)

    def ack(self, seq: int) -> None:
        if self.acked < seq <= self.seq:
            self.acked = seq

    def ready(self) -> bool:
        return self.subscribed and not self.paused and not self.busy()

    def busy(self) -> bool:
        """True while the last frame is still being sent or too many are unacked."""
        sending = self._task is not None and not self._task.done()
        return sending or self.behind()

    def behind(self) -> bool:
        """True while `ACK_WINDOW` frames are unacknowledged."""
        return self.seq - self.acked >= ACK_WINDOW

    def frame(self, tick: Tick, chart: ChartHistory) -> str | None:
        """The next frame for this viewer, or None when nothing changed."""
        sections = tick.sections(self.params)
        full = self._need_full
        if self.drill is not None:
            page = tick.drill_page(self.drill.params)
            sections = {**sections, "drill": self.drill.section(page, full)}
        changed = (
            sections if full else {k: v for k, v in sections.items() if self._sent.get(k) != v}
        )
        points = chart.since(0 if full else self._chart_sent)
        if not full and not changed and not points:
            return None
        self.seq += 1
        self._need_full = False
        self._sent.update(changed)
        self._chart_sent = chart.end
        kind = "snapshot" if full else "update"
        body = ",".join(f'"{k}":{v}' for k, v in changed.items())
        head = f'{{"type":"{kind}","epoch":"{EPOCH}","seq":{self.seq},"ts":{tick.wall_time:.3f}'
        params = dumps(self.params.as_dict())
        return f'{head},"params":{params},"chart":{dumps(points)}{"," if body else ""}{body}}}'

    def offer(self, tick: Tick, chart: ChartHistory, *, force: bool = False) -> bool:
        """Start sending this tick's frame unless paused or busy; True if sent."""
        if not self.subscribed or self.paused:
            return False
        if self.busy() and not force:
            self.dropped += 1
            return False
        text = self.frame(tick, chart)
        self.owed = False  # whatever a subscribe, resync or drill asked for is in it
        if text is None:
            return False
        self._task = asyncio.get_running_loop().create_task(self._deliver(text))
        return True

    async def _deliver(self, text: str) -> None:
        # Daphne writes a frame without suspending, so this thread time is
        # the send's own cost; the broadcaster counts it against its budget.
        started = time.thread_time()
        try:
            await self._send(text)
        except CLIENT_GONE:
            pass  # the browser closed; its disconnect unregisters this viewer
        finally:
            self.send_seconds += time.thread_time() - started


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
        open_drills = (
            v.drill.params
            for v in self.viewers
            if v.drill is not None and v.subscribed and not v.paused
        )
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
            drill_budget=DrillBudget.for_drills(open_drills),
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
