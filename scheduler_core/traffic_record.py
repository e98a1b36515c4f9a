"""What the what-if simulator needs of the live traffic, recorded as a runtime observer.

`TrafficRecorder` hangs on the runtime's observer fan-out (as `RollingStats`
does) and keeps, for the last `horizon_seconds` (an hour), bounded in memory
whatever the request rate, in three parts, each its own module:

- arrivals per (tenant, component, priority) in 5-second buckets
  (`traffic_keys`: at most `max_keys` keys, further ones counted as
  `dropped`); a refused request (429) counts as an arrival, since it was
  offered load;
- per key and 5-minute epoch, a seeded reservoir of `samples_per_epoch`
  requests' classification inputs and the epoch's arrivals by actor path
  (`traffic_samples`), their text held to `max_sample_bytes` in all. The
  actor path kept is the one the request was sent with, every level, not
  the levels the live `max_queue_hierarchy_levels` placed it by: a
  proposal of more levels (or of sub-queues, from 0) replays the levels
  the live queue ignored;
- per minute, service times and the waits the scheduler measured
  (`traffic_minutes`).

Clocks are injected (monotonic for buckets, wall for the samples' "now").
`capture(window_seconds)` copies what a window needs, cheaply, on the
scheduler's loop; `recording_of(capture)` (`scheduler_core.recording`)
turns it into plain JSON-able data (a *recording*) wherever the caller
likes (the simulation worker process); `scheduler_core.whatif_workload`
replays it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from scheduler_core.actor_path import DEFAULT_ACTOR_PATH_HEADER
from scheduler_core.model import Request
from scheduler_core.recording import (
    MAX_WARMUP_SECONDS,
    RECORDING_FORMAT,
    WARMUP_SECONDS,
    Capture,
    KeyCopy,
    recording_of,
    summary_of,
)
from scheduler_core.traffic import DEFAULT_MAX_BYTES
from scheduler_core.traffic_keys import ArrivalKeys, Key
from scheduler_core.traffic_minutes import MinuteLog
from scheduler_core.traffic_samples import EpochSampler

__all__ = [
    "RECORDING_FORMAT",
    "MAX_WARMUP_SECONDS",
    "WARMUP_SECONDS",
    "Capture",
    "TrafficRecorder",
    "WindowExtent",
    "recording_of",
    "summary_of",
]


class WindowExtent(NamedTuple):
    """What `capture(window_seconds)` would take now, known before any capture.

    `window_seconds`: the span the window covers (from its whole minute, or
    from the minute recording began); `warmup_in_seconds`: how long until
    any recorded time lies before the window's start (0: some does now), so
    a page can say, before a run, that there is no warm-up to start from.
    """

    window_seconds: int
    warmup_in_seconds: float


class TrafficRecorder:
    """A runtime observer keeping the last hour of traffic, bounded (see module doc)."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        horizon_seconds: int = 3600,
        bucket_seconds: int = 5,
        max_keys: int = 2000,
        samples_per_epoch: int = 16,
        max_sample_bytes: int = DEFAULT_MAX_BYTES,
        epoch_seconds: int = 300,
        seed: int = 0,
        actor_path_header: Callable[[], str] = lambda: DEFAULT_ACTOR_PATH_HEADER,
        max_actors_per_epoch: int = 64,
    ) -> None:
        if horizon_seconds < 120 or bucket_seconds < 1 or 60 % bucket_seconds:
            raise ValueError("horizon_seconds must be >= 120, bucket_seconds divide 60")
        self._clock = clock
        self._wall = wall_clock
        self.horizon_seconds = horizon_seconds
        self.bucket_seconds = bucket_seconds
        self.slots = horizon_seconds // bucket_seconds
        self.epoch_seconds = epoch_seconds
        self._samples = EpochSampler(
            samples_per_epoch=samples_per_epoch,
            max_actors_per_epoch=max_actors_per_epoch,
            max_bytes=max_sample_bytes,
            epoch_seconds=epoch_seconds,
            epochs_kept=max(1, math.ceil(horizon_seconds / epoch_seconds)),
            seed=seed,
            actor_path_header=actor_path_header,
            wall_clock=wall_clock,
        )
        self._keys = ArrivalKeys(self.slots, max_keys, self._samples.release)
        self._minutes = MinuteLog(horizon_seconds)
        # Nothing was recorded before this: a window reaching further back
        # starts here instead (see `capture`).
        self._started = clock()

    @property
    def sample_bytes(self) -> int:
        """The sampled requests' size (`ENTRY_OVERHEAD` + text each) and their actor counts'."""
        return self._samples.used

    # -- observer hooks --------------------------------------------------------

    def on_enqueued(self, request: Request) -> None:
        self._arrival(request)

    def on_rejected(self, request: Request, reason: str) -> None:
        self._arrival(request)
        self._minutes.rejected(self._clock())

    def on_dispatched(self, request: Request, querier_id: str, worker_id: int, wait: float) -> None:
        self._minutes.dispatched(
            request.id, request.component, request.priority, wait, self._clock()
        )

    def on_completed(self, request: Request) -> None:
        self._minutes.completed(request.id, request.component, self._clock())

    def on_cancelled(self, request: Request) -> None:
        self._minutes.ended(request.id)

    def on_failed(self, request: Request, reason: str) -> None:
        self._minutes.ended(request.id)

    # -- export ------------------------------------------------------------------

    def capture(
        self,
        window_seconds: int,
        warmup_seconds: int = WARMUP_SECONDS,
        max_warmup_seconds: int = MAX_WARMUP_SECONDS,
    ) -> Capture:
        """Copies of what the last `window_seconds` need: cheap, for the scheduler's loop.

        The window starts at a whole minute (so it spans `window_seconds` to
        a minute more), where the per-minute waits start too, and time
        recorded before it comes along as a warm-up: the replay starts
        there, from an empty queue, so the window begins with the queue it
        had. The warm-up is `warmup_seconds`, plus as far back as the
        backlog queued at the window's start reaches by the waits measured
        (`MinuteLog.backlog_start`), at most `max_warmup_seconds`: a class
        starved for minutes (at its tenant's outstanding limit, where the
        limit sheds the tenant's other requests) needs those minutes to
        build up again: from a minute, the replay had too little of it, so
        too few 429s, and the requests the limit had refused queued
        instead (the demo's priority 2 waited 32 s for 2.4 measured). A
        recorder younger than the window starts it at the minute recording
        began: time nobody recorded would replay as an idle fleet, and
        thin out the rates and utilisation the simulator reports.
        Turning it into a recording (`recording_of`) is left to the caller,
        which runs it away from the loop (the simulation worker process).
        """
        width = self.bucket_seconds
        now = self._clock()
        current = int(now // width)
        start = self._window_start(window_seconds, now)
        first = start // width
        oldest = current - self.slots + 1
        # The warm-up holds recorded time only: before the recorder began it
        # is empty, and would be reported (and sized) as a minute replayed.
        began = min(first, int(self._started // width))
        longest = max(0, int(max_warmup_seconds))
        backlog = start - self._minutes.backlog_start(start, start - longest)
        warmup = min(longest, max(0, int(warmup_seconds)) + backlog)
        warm_first = max(oldest, began, first - math.ceil(warmup / width))
        early = warm_first * width
        dropped = self._keys.dropped
        return Capture(
            self.bucket_seconds,
            self.slots,
            first,
            current,
            warm_first,
            self._wall(),
            [self._copy(key) for key in self._keys.since(warm_first)],
            self.epoch_seconds,
            (dropped.counts[:], dropped.last_bucket),
            self._minutes.copy_since(early),
        )

    def extent(self, window_seconds: int) -> WindowExtent:
        """The window `capture(window_seconds)` would take now (see `WindowExtent`).

        Recorded time lies before the window once its start is a whole
        minute after the one the recorder began in (`capture` warms up only
        from recorded time): that start moves with the clock, so the answer
        says when, for a page to keep in step without asking again.
        """
        width = self.bucket_seconds
        now = self._clock()
        start = self._window_start(window_seconds, now)
        span = (int(now // width) + 1) * width - start
        # The first whole minute after recording began: once the window
        # starts there, the time before it was recorded.
        minute = (math.floor(self._started / 60.0) + 1) * 60
        window = self._window(window_seconds)
        return WindowExtent(span, max(0.0, minute + window - now) if start < minute else 0.0)

    def _window(self, window_seconds: int) -> int:
        """The window asked for, within what the horizon holds (a warm-up's minute kept)."""
        return max(60, min(int(window_seconds), self.horizon_seconds - 60))

    def _window_start(self, window_seconds: int, now: float) -> int:
        """The whole minute a window ending `now` starts at (never before recording began's)."""
        return int(math.floor(max(now - self._window(window_seconds), self._started) / 60.0)) * 60

    def export(self, window_seconds: int) -> dict[str, Any]:
        """The last `window_seconds` as a recording: `recording_of(capture(...))`."""
        return recording_of(self.capture(window_seconds))

    # -- internals ---------------------------------------------------------------

    def _arrival(self, request: Request) -> None:
        now = self._clock()
        key = self._keys.arrival(request, int(now // self.bucket_seconds))
        if key is not None:
            self._samples.add(key.epochs, request, now)

    def _copy(self, key: Key) -> KeyCopy:
        width = self.epoch_seconds
        return (
            key.tenant_id,
            key.component,
            key.priority,
            key.counts[:],
            key.last_bucket,
            [(e.index * width, sample) for e in key.epochs for sample in e.samples],
            [(e.index * width, e.seen, dict(e.actors)) for e in key.epochs],
        )
