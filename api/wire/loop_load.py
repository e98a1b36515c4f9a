"""How busy this process's event loop is: its thread's CPU, and how late it wakes.

Both doors, the queue, the dispatch and the inspector's ticks all run on one
asyncio loop, so that loop's thread is what saturates first: once it is busy
a whole second per second, requests wait for the loop, not for queriers
(docs/operations.md, "Sizing"). `LoopLoad` samples it from a task on that
loop, every half second:

- the loop thread's CPU time, with `time.thread_time`, which counts only the
  calling thread (so it is read on the loop, never from a scrape's thread);
- the whole process's CPU time (`os.times`: every thread, as /proc counts it,
  the figure issue 17's benchmarks compare with Cortex's scheduler);
- how late the sample's own sleep woke up: the loop's lag, which is how long
  a callback that became ready waited for the loop;
- how many requests had been dispatched to queriers, so CPU per query comes
  from the same two instants as the CPU.

The last minute of samples feeds the inspector's header (`figures`); the
running totals feed /metrics (`LoopLoadCollector`). Clocks are injected, so
tests drive it without sleeping.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from bisect import bisect_left
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from itertools import takewhile
from typing import Any

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.metrics_core import Metric

from api.wire.loop_metrics import Build, LoopBoundCollector

__all__ = [
    "LAG_BUCKETS",
    "LoopFigures",
    "LoopLoad",
    "LoopLoadCollector",
    "load_block",
    "process_cpu_seconds",
]

# Seconds: a healthy loop wakes within a millisecond; a quarter second late
# is a loop that cannot keep up, or one call that blocked it.
LAG_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


def process_cpu_seconds() -> float:
    """User + system CPU of this process, every thread."""
    times = os.times()
    return times.user + times.system


@dataclass(frozen=True, slots=True)
class _Sample:
    at: float
    thread_cpu: float
    process_cpu: float
    lag: float
    dispatched: int


@dataclass(frozen=True, slots=True)
class LoopFigures:
    """The loop over the last `seconds`: CPU per wall second, and its worst lag."""

    seconds: float
    busy: float  # the loop thread's CPU per second, 0-1
    process_cpu: float  # every thread's CPU per second (above 1 with threads busy)
    lag_max: float  # seconds
    dispatched: float  # requests handed to queriers per second

    @property
    def cpu_per_query_us(self) -> float | None:
        """The process's CPU per dispatched request; None under one a second.

        Below that, start-up, scrapes and idle ticks would be most of it.
        """
        if self.dispatched < 1.0:
            return None
        return self.process_cpu / self.dispatched * 1e6


class LoopLoad:
    """Samples of the event loop's thread, kept for the last `keep` seconds."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        thread_cpu: Callable[[], float] = time.thread_time,
        process_cpu: Callable[[], float] = process_cpu_seconds,
        dispatched: Callable[[], int] = lambda: 0,
        interval: float = 0.5,
        keep: float = 60.0,
    ) -> None:
        self._clock = clock
        self._thread_cpu = thread_cpu
        self._process_cpu = process_cpu
        self._dispatched = dispatched
        self.interval = interval
        self._samples: deque[_Sample] = deque(maxlen=int(keep / max(interval, 0.01)) + 2)
        self._thread: int | None = None
        # Cumulative, as Prometheus histograms are: one count per bucket bound.
        self._lag_counts = [0] * len(LAG_BUCKETS)
        self._lag_sum = 0.0
        self._lag_samples = 0

    async def run(self) -> None:
        """Sample until cancelled; runs as a task on the loop it measures."""
        self._thread = threading.get_ident()
        # A new loop (a restarted host) has its own thread clock: old samples
        # would make the first difference meaningless.
        self._samples.clear()
        self._add(0.0)
        while True:
            due = self._clock() + self.interval
            await asyncio.sleep(self.interval)
            self.sample(max(0.0, self._clock() - due))

    def sample(self, lag: float) -> None:
        """Record one sample that woke `lag` seconds late (the loop's thread only)."""
        self._add(lag)
        self._lag_sum += lag
        self._lag_samples += 1
        for i in range(bisect_left(LAG_BUCKETS, lag), len(LAG_BUCKETS)):
            self._lag_counts[i] += 1

    def _add(self, lag: float) -> None:
        self._samples.append(
            _Sample(self._clock(), self._thread_cpu(), self._process_cpu(), lag, self._dispatched())
        )

    def figures(self, window: float = 10.0) -> LoopFigures | None:
        """The last `window` seconds (at least two samples apart), or None before that."""
        samples = self._samples
        if len(samples) < 2:
            return None
        last = samples[-1]
        # Newest first: the walk stops at the window's edge, not at the deque's end.
        inside = list(takewhile(lambda s: last.at - s.at <= window, reversed(samples)))
        # A window shorter than one interval still spans the last two samples.
        first = inside[-1] if len(inside) > 1 else samples[-2]
        lag_max = max(s.lag for s in inside)
        span = last.at - first.at
        if span <= 0:
            return None
        busy = (last.thread_cpu - first.thread_cpu) / span
        return LoopFigures(
            seconds=span,
            busy=min(1.0, max(0.0, busy)),
            process_cpu=max(0.0, (last.process_cpu - first.process_cpu) / span),
            lag_max=lag_max,
            dispatched=max(0, last.dispatched - first.dispatched) / span,
        )

    def thread_cpu_total(self) -> float:
        """The loop thread's CPU seconds: read now on that thread, else the last sample."""
        if self._thread == threading.get_ident():
            return self._thread_cpu()
        return self._samples[-1].thread_cpu if self._samples else 0.0

    def lag_histogram(self) -> tuple[list[tuple[str, float]], float]:
        """Cumulative buckets (Prometheus's `le` strings, "+Inf" last) and the sum."""
        buckets = [(repr(b), float(n)) for b, n in zip(LAG_BUCKETS, self._lag_counts, strict=True)]
        buckets.append(("+Inf", float(self._lag_samples)))
        return buckets, self._lag_sum


def load_block(load: LoopLoad) -> dict[str, Any]:
    """The header's `load` figures over the last ten seconds (`{}` before two samples)."""
    figures = load.figures()
    if figures is None:
        return {}
    per_query = figures.cpu_per_query_us
    return {
        "window": round(figures.seconds, 3),
        "busy": round(figures.busy, 4),
        "process_cpu": round(figures.process_cpu, 4),
        "lag_max": round(figures.lag_max, 6),
        "dispatched": round(figures.dispatched, 2),
        "cpu_per_query_us": None if per_query is None else round(per_query, 1),
    }


class LoopLoadCollector(LoopBoundCollector):
    """`queue_inspector_event_loop_cpu_seconds_total` and `..._lag_seconds`."""

    def __init__(self, load: Callable[[], LoopLoad | None]) -> None:
        self._load = load

    def take(self) -> Build:
        load = self._load()
        if load is None:
            return list
        cpu = load.thread_cpu_total()
        buckets, lag_sum = load.lag_histogram()

        def build() -> list[Metric]:
            counter = CounterMetricFamily(
                "queue_inspector_event_loop_cpu_seconds",
                "CPU time of the thread running the scheduler's event loop; its rate "
                "is the loop's utilisation (1 = saturated, one core).",
            )
            counter.add_metric([], cpu)
            lag = HistogramMetricFamily(
                "queue_inspector_event_loop_lag_seconds",
                "How late a timer on the event loop fired, sampled twice a second.",
            )
            lag.add_metric([], buckets, lag_sum)
            return [counter, lag]

        return build
