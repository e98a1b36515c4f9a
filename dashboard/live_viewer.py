"""One inspector connection's frame state, as the broadcaster (`dashboard.live`) serves it.

A `Viewer` turns a tick into its browser's next frame: the sections that
changed since the last frame it was sent, or all of them when a full frame
is due (subscribe, resync, a new epoch). It never awaits the browser: a
frame still being sent, or `ACK_WINDOW` frames unacknowledged, makes it
skip ticks, and a frame asked for at once while it is that far behind is
`owed` until it acks. Re-exported by `dashboard.live`, the one place the
live view is imported from.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable

from api.wire.consumers.guard import CLIENT_GONE
from dashboard.drill import DrillState
from dashboard.live_tick import ChartHistory, Tick
from dashboard.projections import ViewParams
from dashboard.wire import dumps

__all__ = ["ACK_WINDOW", "EPOCH", "Viewer"]

# Frames a viewer may have unacknowledged before it starts skipping ticks.
ACK_WINDOW = 2
# Changes on every process start, so a browser that reconnects to a restarted
# server (or another replica) knows its seq numbers mean nothing any more.
EPOCH = f"{os.getpid():x}-{int(time.time() * 1000):x}"


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
