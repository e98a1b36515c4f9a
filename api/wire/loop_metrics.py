"""Scrape-time collectors whose state belongs to the event loop, rendered off it.

A `/metrics` scrape of a big queue formats tens of thousands of series. On
the event loop, that stalls dispatch for as long: 380 ms at 10,000 tenants.
So the view (`render`) reads what belongs to the loop there, through each
`LoopBoundCollector.take()`, and formats the text in a worker thread. There,
`collect()` finds the result taken for this scrape. A plain
`generate_latest` anywhere else still works, because `collect()` then takes
it itself. The client library's own metrics are safe to read from the
thread (each sits behind its own lock).

`TallyCounter` is a labelled counter kept in a plain dict on the loop: an
event is one addition, where a library counter child takes a lock, and a
scrape copies the dict there and writes it as rows
(`api.wire.exposition.RowFamily`). `TallyHistogram` is the same for a
labelled histogram: an observation is a `bisect` and two additions, where a
library child walks its bounds in Python and takes two locks. The text is
written by `api.wire.exposition.write_latest`, byte for byte
`generate_latest`'s.
"""

from __future__ import annotations

import abc
import asyncio
import math
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any
from weakref import WeakKeyDictionary

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.utils import floatToGoString

from api.wire.exposition import RowFamily, write_latest

__all__ = [
    "LoopBoundCollector",
    "TallyCounter",
    "TallyHistogram",
    "register_loop_bound",
    "render",
]

Build = Callable[[], Iterable[Metric]]

# What `render` took on the loop for the scrape under way, per collector; set
# around the worker thread's call (asyncio.to_thread runs it in this context).
_TAKEN: ContextVar[Mapping[Collector, Build] | None] = ContextVar("taken", default=None)
_BOUND: WeakKeyDictionary[CollectorRegistry, list[LoopBoundCollector]] = WeakKeyDictionary()


class LoopBoundCollector(Collector):
    """A collector that reads the event loop's state: `take()` there, build anywhere."""

    @abc.abstractmethod
    def take(self) -> Build:
        """Read the state now, on the loop; the returned call builds the families."""

    def collect(self) -> Iterator[Metric]:
        taken = _TAKEN.get()
        build = taken.get(self) if taken is not None else None
        yield from (build if build is not None else self.take())()

    def describe(self) -> list[Any]:
        return []  # unchecked: the families depend on the state


class TallyCounter(LoopBoundCollector):
    """A counter by label values, counted on the loop: `inc(*values)` adds one, `add` more.

    Its samples come out in the order their label values were first
    counted, as a library `Counter`'s children do. Only the loop may call
    `inc` and `remove`; `take` copies the dict there in one C call, so a
    scrape from another thread never sees it change mid-read.
    """

    def __init__(
        self,
        name: str,
        documentation: str,
        labels: tuple[str, ...],
        registry: CollectorRegistry | None = None,
    ) -> None:
        """As a library `Counter`, `registry` (if given) registers it (`register_loop_bound`)."""
        self._family = (name, documentation, labels)
        self._counts: dict[tuple[str, ...], float] = {}
        if registry is not None:
            register_loop_bound(registry, self)

    def inc(self, *values: str) -> None:
        counts = self._counts
        counts[values] = counts.get(values, 0.0) + 1.0

    def add(self, amount: float, *values: str) -> None:
        """Add `amount` (not negative: a counter never goes down)."""
        if amount > 0:
            counts = self._counts
            counts[values] = counts.get(values, 0.0) + amount

    def remove(self, *values: str) -> None:
        """Drop one series (a tenant gone idle); nothing if it was never counted."""
        self._counts.pop(values, None)

    def take(self) -> Build:
        rows = list(self._counts.copy().items())
        name, documentation, labels = self._family

        def build() -> list[Metric]:
            family = RowFamily(name, documentation, "counter", labels)
            family.rows = rows
            return [family]

        return build


class TallyHistogram(LoopBoundCollector):
    """A histogram by label values, observed on the loop: `observe(amount, *values)`.

    Writes what a library `Histogram` with the same buckets writes when fed
    the same observations (`_created` aside, which this process turns off):
    cumulative `_bucket`s ending at `+Inf`, `_count`, and `_sum` when the
    first bound is not negative, series in the order first observed. As
    there, an amount lands in the first bucket whose bound is at least it,
    and a NaN only adds to the sum. Only the loop may call `observe`;
    `take` copies each series' counts there.
    """

    def __init__(
        self,
        name: str,
        documentation: str,
        labels: tuple[str, ...],
        buckets: Iterable[float],
        registry: CollectorRegistry | None = None,
    ) -> None:
        bounds = [float(b) for b in buckets]
        if bounds != sorted(bounds):
            raise ValueError("buckets not in sorted order")
        if not bounds or bounds[-1] != math.inf:
            bounds.append(math.inf)
        if len(bounds) < 2:
            raise ValueError("at least two buckets are needed")
        self._family = (name, documentation, labels)
        self._bounds = tuple(bounds)
        self._les = tuple(floatToGoString(b) for b in bounds)
        # Per series: each bucket's own count (not cumulative), then the sum.
        self._series: dict[tuple[str, ...], list[float]] = {}
        if registry is not None:
            register_loop_bound(registry, self)

    def observe(self, amount: float, *values: str) -> None:
        series = self._series.get(values)
        if series is None:
            series = self._series[values] = [0.0] * (len(self._bounds) + 1)
        if amount == amount:  # bisect would put a NaN in the first bucket
            series[bisect_left(self._bounds, amount)] += 1.0
        series[-1] += amount

    def take(self) -> Build:
        rows = [(values, series[:]) for values, series in self._series.items()]
        name, documentation, labels = self._family
        les, with_sum = self._les, self._bounds[0] >= 0

        def build() -> list[Metric]:
            family = Metric(name, documentation, "histogram")
            for values, series in rows:
                base = dict(zip(labels, values, strict=True))
                acc = 0.0
                for le, count in zip(les, series, strict=False):
                    acc += count
                    family.add_sample(f"{name}_bucket", {**base, "le": le}, acc)
                family.add_sample(f"{name}_count", base, acc)
                if with_sum:
                    family.add_sample(f"{name}_sum", base, series[-1])
            return [family]

        return build


def register_loop_bound(registry: CollectorRegistry, collector: LoopBoundCollector) -> None:
    """Register `collector`, and have `render` take it on the loop."""
    registry.register(collector)
    _BOUND.setdefault(registry, []).append(collector)


async def render(registry: CollectorRegistry) -> bytes:
    """The registry's text exposition (`generate_latest`'s), formatted in a worker thread.

    Every loop-bound collector takes its state here first, on the loop,
    before the thread starts.
    """
    token = _TAKEN.set({collector: collector.take() for collector in _BOUND.get(registry, ())})
    try:
        return await asyncio.to_thread(write_latest, registry)
    finally:
        _TAKEN.reset(token)
