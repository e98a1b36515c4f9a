"""Service times replayed from recorded histograms (the `recent` workload's service model).

The recorder keeps, per minute and component, a log-scale histogram of
service times (`scheduler_core.traffic_minutes`). `HistogramService` draws
from them by inverse CDF: the histogram of the minute being replayed, for
the component the request gets under the simulated config, the whole
window's for that component when that minute has none, and all
components' when the component had none at all; within a bucket the
quantile is interpolated geometrically (the buckets are log-scale). The
operator's `service_factor` knob scales the result.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler_core.model import COMPONENTS
from scheduler_core.stats import bucket_bounds
from scheduler_core.whatif_engine import US
from scheduler_core.whatif_model import Knobs, WorkloadError, service_factor

__all__ = ["HistogramService"]


class HistogramService:
    """Inverse CDF of recorded log-scale histograms, per component and minute."""

    def __init__(self, rows: Mapping[str, Sequence[Sequence[Any]]], knobs: Knobs) -> None:
        self._starts: dict[str, list[float]] = {}
        self._cdfs: dict[str, list[tuple[list[int], list[int]]]] = {}
        merged: Counter[int] = Counter()
        for component, minutes in rows.items():
            whole: Counter[int] = Counter()
            starts, cdfs = [], []
            for start, counts in minutes:
                hist = Counter({int(i): int(n) for i, n in counts})
                whole.update(hist)
                starts.append(float(start))
                cdfs.append(_cdf(hist))
            merged.update(whole)
            self._starts[component] = starts
            self._cdfs[component] = cdfs
            self._cdfs[component + "/all"] = [_cdf(whole)]
        if not merged:
            raise WorkloadError(
                "workload.window_seconds",
                "no request completed in this window, so there are no service times to replay",
            )
        self._any = _cdf(merged)
        self._factors = {c: service_factor(knobs, c) for c in COMPONENTS}

    def __call__(self, component: str, u: float, second: int) -> int:
        starts = self._starts.get(component)
        if starts is None:
            cdf = self._any
        else:
            row = bisect_right(starts, second) - 1
            cdf = self._cdfs[component][row] if row >= 0 else self._cdfs[component + "/all"][0]
        return round(_sample(cdf, u) * self._factors.get(component, 1.0) * US)


def _cdf(hist: Mapping[int, int]) -> tuple[list[int], list[int]]:
    indices = sorted(i for i, n in hist.items() if n > 0)
    cumulative, total = [], 0
    for i in indices:
        total += hist[i]
        cumulative.append(total)
    return indices, cumulative


def _sample(cdf: tuple[list[int], list[int]], u: float) -> float:
    """The u-quantile, interpolated geometrically inside its bucket."""
    indices, cumulative = cdf
    target = u * cumulative[-1]
    at = min(bisect_left(cumulative, target), len(indices) - 1)
    before = cumulative[at - 1] if at else 0
    share = (target - before) / max(1, cumulative[at] - before)
    low, high = bucket_bounds(indices[at])
    return high * share if low <= 0 else float(low * (high / low) ** share)
