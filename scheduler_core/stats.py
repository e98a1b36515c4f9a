"""Rolling-window scheduler statistics for the inspector, as a runtime observer.

Everything is kept in per-second buckets on an injected clock, for at most
`window_seconds`, so memory is bounded by the window and the number of
(component, priority) pairs, never by the request rate: queue waits go into
sparse log-scale histograms (each bucket ~5% wide) rather than a list of
samples. Percentiles are therefore accurate to about 5%, which is what a
p50/p99 panel needs, and two stats objects fed the same events agree exactly.
"""

from __future__ import annotations

import math
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from scheduler_core.model import CancelReason, Request

__all__ = [
    "EVENTS",
    "HistoryPoint",
    "RollingStats",
    "WaitSummary",
    "WaitHistogram",
    "bucket_bounds",
]

EVENTS: tuple[str, ...] = ("enqueued", "dispatched", "rejected", "cancelled", "completed", "failed")

# Waits below this are counted in bucket 0: a sub-10µs wait is "no wait".
_MIN_WAIT = 1e-5
_GROWTH = 1.05
_LOG_GROWTH = math.log(_GROWTH)


class WaitSummary(NamedTuple):
    """Queue wait over a window for one dimension value."""

    samples: int
    p50: float
    p99: float
    max: float


class HistoryPoint(NamedTuple):
    """One second of the chart series."""

    second: int
    queue_length: int
    dispatched: int


def _bucket(seconds: float) -> int:
    if seconds <= _MIN_WAIT:
        return 0
    return 1 + int(math.log(seconds / _MIN_WAIT) / _LOG_GROWTH)


def _bucket_value(index: int) -> float:
    """The upper bound of a bucket, so a reported percentile never understates."""
    if index == 0:
        return _MIN_WAIT
    return float(_MIN_WAIT * _GROWTH**index)


def bucket_bounds(index: int) -> tuple[float, float]:
    """The (lower, upper] seconds a histogram bucket index stands for."""
    if index <= 0:
        return 0.0, _MIN_WAIT
    return _bucket_value(index - 1), _bucket_value(index)


class WaitHistogram:
    """A sparse log-scale histogram of waits; merging is adding counts."""

    __slots__ = ("counts", "max")

    def __init__(self) -> None:
        self.counts: Counter[int] = Counter()
        self.max = 0.0

    def add(self, seconds: float) -> None:
        self.counts[_bucket(seconds)] += 1
        if seconds > self.max:
            self.max = seconds

    def merge(self, other: WaitHistogram) -> None:
        self.counts.update(other.counts)
        self.max = max(self.max, other.max)

    def total(self) -> int:
        return sum(self.counts.values())

    def quantile(self, q: float) -> float:
        """The smallest bucket bound below which at least `q` of samples lie."""
        total = self.total()
        if not total:
            return 0.0
        rank = max(1, math.ceil(q * total))
        seen = 0
        for index in sorted(self.counts):
            seen += self.counts[index]
            if seen >= rank:
                return min(_bucket_value(index), self.max)
        return self.max

    def summary(self) -> WaitSummary:
        return WaitSummary(self.total(), self.quantile(0.5), self.quantile(0.99), self.max)


K = TypeVar("K", str, int)


def _histogram(table: dict[K, WaitHistogram], key: K) -> WaitHistogram:
    # Looked up before creating: setdefault(key, WaitHistogram()) built and
    # dropped two histograms (two Counters) per dispatched request.
    found = table.get(key)
    if found is None:
        found = table[key] = WaitHistogram()
    return found


@dataclass(slots=True)
class _Second:
    """Everything that happened in one whole second of the clock."""

    second: int
    events: Counter[str] = field(default_factory=Counter)
    by_component: dict[str, WaitHistogram] = field(default_factory=dict)
    by_priority: dict[int, WaitHistogram] = field(default_factory=dict)
    queue_length: int | None = None


class RollingStats:
    """Counts, queue-wait percentiles and a chart series over the last minutes.

    Invariant: `_seconds` holds buckets in increasing `second` order, none
    older than `window_seconds` before the newest; a bucket is created only
    when something happens in that second, so an idle scheduler costs nothing.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        window_seconds: int = 300,
    ) -> None:
        if window_seconds < 1:
            raise ValueError("window_seconds must be at least 1")
        self._clock = clock
        self.window_seconds = window_seconds
        self._seconds: deque[_Second] = deque()
        # The last length sampled in a bucket that has since expired.
        self._before_window = 0
        # The waits of the window's closed seconds, merged, per (dimension,
        # span in seconds), for the second `_closed_at` (see `_waits`).
        self._closed: dict[tuple[str, int], dict[Any, WaitHistogram]] = {}
        self._closed_at: int | None = None
        # Every request handed to a querier since this object was made, for
        # rates between two arbitrary instants (api.wire.loop_load's CPU per
        # query), which whole-second buckets cannot give.
        self.dispatched_total = 0

    # -- observer hooks (SchedulerRuntime calls these) ------------------------

    def on_enqueued(self, request: Request) -> None:
        self._current().events["enqueued"] += 1

    def on_rejected(self, request: Request, reason: str) -> None:
        self._current().events["rejected"] += 1

    def on_dispatched(self, request: Request, querier_id: str, worker_id: int, wait: float) -> None:
        bucket = self._current()
        bucket.events["dispatched"] += 1
        self.dispatched_total += 1
        _histogram(bucket.by_component, request.component).add(wait)
        _histogram(bucket.by_priority, request.priority).add(wait)

    def on_completed(self, request: Request) -> None:
        self._current().events["completed"] += 1

    def on_cancelled(self, request: Request) -> None:
        self._current().events["cancelled"] += 1

    def on_failed(self, request: Request, reason: str) -> None:
        # An operator's cancel is told to its frontend as a failure, yet the
        # request did not fail: it was cancelled, as a frontend's cancel is.
        kind = "cancelled" if isinstance(reason, CancelReason) else "failed"
        self._current().events[kind] += 1

    def record_queue_length(self, length: int) -> None:
        """Sample the queue length; the host calls this about once a second."""
        self._current().queue_length = length

    # -- reads ---------------------------------------------------------------

    def counts(self, window: float = 60.0) -> dict[str, int]:
        """Events per kind over the last `window` seconds (every kind present)."""
        total: Counter[str] = Counter()
        for bucket in self._recent(window):
            total.update(bucket.events)
        return {kind: total[kind] for kind in EVENTS}

    def rates(self, window: float = 60.0) -> dict[str, float]:
        """Events per second over the last `window` seconds."""
        span = self._span(window)
        return {kind: n / span for kind, n in self.counts(window).items()}

    def wait_by_component(self, window: float = 60.0) -> dict[str, WaitSummary]:
        return _summaries(self._waits(window, "by_component"))

    def wait_by_priority(self, window: float = 60.0) -> dict[int, WaitSummary]:
        return _summaries(self._waits(window, "by_priority"))

    def history(self, seconds: int = 300) -> list[HistoryPoint]:
        """One point per second, oldest first, ending with the current second.

        Seconds with no sample repeat the last known queue length, so the
        chart line stays continuous while nothing happens.
        """
        now = self._now()
        self._expire(now)
        seconds = min(seconds, self.window_seconds)
        by_second = {b.second: b for b in self._seconds}
        length = self._length_before(now - seconds + 1)
        points: list[HistoryPoint] = []
        for second in range(now - seconds + 1, now + 1):
            bucket = by_second.get(second)
            dispatched = 0
            if bucket is not None:
                dispatched = bucket.events["dispatched"]
                if bucket.queue_length is not None:
                    length = bucket.queue_length
            points.append(HistoryPoint(second, length, dispatched))
        return points

    # -- internals -----------------------------------------------------------

    def _now(self) -> int:
        return int(math.floor(self._clock()))

    def _current(self) -> _Second:
        now = self._now()
        if self._seconds and self._seconds[-1].second == now:
            return self._seconds[-1]
        self._expire(now)
        bucket = _Second(now)
        self._seconds.append(bucket)
        return bucket

    def _expire(self, now: int) -> None:
        oldest = now - self.window_seconds + 1
        while self._seconds and self._seconds[0].second < oldest:
            gone = self._seconds.popleft()
            if gone.queue_length is not None:
                self._before_window = gone.queue_length

    def _length_before(self, first_second: int) -> int:
        """The last sampled length before `first_second` (0 if none was kept)."""
        length = self._before_window
        for bucket in self._seconds:
            if bucket.second >= first_second:
                break
            if bucket.queue_length is not None:
                length = bucket.queue_length
        return length

    def _span(self, window: float) -> float:
        return max(1.0, min(float(window), float(self.window_seconds)))

    def _waits(self, window: float, dimension: str) -> list[dict[Any, WaitHistogram]]:
        """The window's waits by `dimension`: its closed seconds merged, then the current one's.

        Hooks write only to the current second, so the seconds before it are
        final and their merge is kept until the clock's next second: a read
        merges two maps instead of one per second of the window. The
        inspector reads these on every tick and chart point, and at a minute
        of traffic over a few components and priorities the full merge took
        about 1.6 ms each time.
        """
        now = self._now()
        self._expire(now)
        span = int(math.ceil(self._span(window)))
        if self._closed_at != now:
            self._closed.clear()
            self._closed_at = now
        closed = self._closed.get((dimension, span))
        if closed is None:
            closed = self._closed[(dimension, span)] = _merged(
                getattr(b, dimension) for b in self._seconds if now - span < b.second < now
            )
        last = self._seconds[-1] if self._seconds else None
        return (
            [closed] if last is None or last.second != now else [closed, getattr(last, dimension)]
        )

    def _recent(self, window: float) -> Iterable[_Second]:
        now = self._now()
        self._expire(now)
        oldest = now - int(math.ceil(self._span(window))) + 1
        return [b for b in self._seconds if b.second >= oldest]


def _merged(maps: Iterable[dict[K, WaitHistogram]]) -> dict[K, WaitHistogram]:
    """New histograms, one per key, each the sum of that key's in `maps`."""
    merged: dict[K, WaitHistogram] = {}
    for per_key in maps:
        for key, hist in per_key.items():
            _histogram(merged, key).merge(hist)
    return merged


def _summaries(maps: Iterable[dict[K, WaitHistogram]]) -> dict[K, WaitSummary]:
    return {key: hist.summary() for key, hist in sorted(_merged(maps).items())}
