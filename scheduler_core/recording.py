"""A recording: the plain, JSON-able form of a window of recorded traffic.

`scheduler_core.traffic_record.TrafficRecorder.capture` copies a window's
data on the scheduler's loop into a `Capture` (picklable);
`recording_of(capture)` turns it into a recording wherever the caller likes
(the simulation worker process), which `scheduler_core.whatif_workload`
replays and `GET /api/v1/recording/` hands out. Its keys: `window_seconds`,
`bucket_seconds`, `epoch_seconds`, `warmup_seconds`, `recorded_at`, `keys`
(per tenant, component and priority: `counts` as [bucket offset, n], with
negative offsets for the warm-up, and `samples`), `dropped`,
`service_seconds` (per component: [minute start offset, histogram]) and
`measured` (waits by component and priority, rejections). The service adds
`fleet`, `windows` and, for `recording/`, `config`.
"""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass
from typing import Any

from scheduler_core.stats import WaitHistogram

__all__ = ["RECORDING_FORMAT", "Capture", "WaitCopy", "recording_of", "summary_of"]

RECORDING_FORMAT = 1

WaitCopy = tuple[Counter[int], float, float]  # histogram counts, max, sum


def summary_of(waits: list[WaitCopy]) -> dict[str, float | int]:
    """{mean, p50, p99, max, count} of merged minutes (percentiles to ~5%)."""
    hist = WaitHistogram()
    total = 0.0
    for counts, most, part_total in waits:
        hist.counts.update(counts)
        hist.max = max(hist.max, most)
        total += part_total
    count = hist.total()
    return {
        "mean": round(total / count, 6) if count else 0.0,
        "p50": round(hist.quantile(0.5), 6),
        "p99": round(hist.quantile(0.99), 6),
        "max": round(hist.max, 6),
        "count": count,
    }


@dataclass(frozen=True, slots=True)
class Capture:
    """Plain copies taken on the loop (picklable); `recording_of` reads them."""

    bucket_seconds: int
    slots: int
    first: int
    current: int
    warm_first: int
    wall: float
    # (tenant, component, priority, count ring, last bucket, [(epoch start, sample)])
    keys: list[tuple[str, str, int, array[int], int, list[tuple[int, dict[str, Any]]]]]
    epoch_seconds: int
    dropped: tuple[array[int], int]
    # (minute, service {component: (counts, max)}, waits by component, by priority, rejected)
    minutes: list[
        tuple[
            int,
            dict[str, tuple[Counter[int], float]],
            dict[str, WaitCopy],
            dict[int, WaitCopy],
            int,
        ]
    ]


def _ring(counts: array[int], last: int, capture: Capture) -> list[list[int]]:
    """[[bucket offset from the window's first, count], ...] of the non-empty buckets.

    Warm-up buckets, before the window, have negative offsets.
    """
    out = []
    slots = capture.slots
    for bucket in range(max(capture.warm_first, last - slots + 1), min(last, capture.current) + 1):
        n = counts[bucket % slots]
        if n:
            out.append([bucket - capture.first, n])
    return out


def recording_of(capture: Capture) -> dict[str, Any]:
    """A capture as a recording: plain JSON-able data (see the module doc).

    Times in it are seconds from the window's start; each sample keeps its
    own wall clock reading (`now`) and absolute start/end, exactly what the
    classifier saw. The measured waits are those of the window's whole minutes.
    """
    start = capture.first * capture.bucket_seconds
    early = capture.warm_first * capture.bucket_seconds
    keys = []
    for tenant, component, priority, counts, last, sampled in capture.keys:
        ring = _ring(counts, last, capture)
        # Samples of the epochs overlapping the window, each with its epoch's
        # start in window seconds (negative: it began before the window).
        samples = [
            {**sample, "epoch": epoch - start}
            for epoch, sample in sampled
            if epoch + capture.epoch_seconds > early
        ]
        if ring and samples:
            keys.append(
                {
                    "tenant": tenant,
                    "component": component,
                    "priority": priority,
                    "counts": ring,
                    "samples": samples,
                }
            )
    service: dict[str, list[list[Any]]] = {}
    comps: dict[str, list[WaitCopy]] = {}
    prios: dict[int, list[WaitCopy]] = {}
    rejected = 0
    for minute, hists, by_component, by_priority, refused in capture.minutes:
        for component, (hist, _) in sorted(hists.items()):
            rows = service.setdefault(component, [])
            rows.append([minute * 60.0 - start, sorted(hist.items())])
        if minute * 60 < start:
            continue  # a warm-up minute: its service times only
        for component, waits in by_component.items():
            comps.setdefault(component, []).append(waits)
        for priority, waits in by_priority.items():
            prios.setdefault(priority, []).append(waits)
        rejected += refused
    return {
        "format": RECORDING_FORMAT,
        "window_seconds": (capture.current - capture.first + 1) * capture.bucket_seconds,
        "bucket_seconds": capture.bucket_seconds,
        "epoch_seconds": capture.epoch_seconds,
        "warmup_seconds": (capture.first - capture.warm_first) * capture.bucket_seconds,
        "recorded_at": capture.wall,
        "keys": keys,
        "dropped": sum(n for offset, n in _ring(*capture.dropped, capture) if offset >= 0),
        "service_seconds": service,
        "measured": {
            "by_component": {c: summary_of(w) for c, w in sorted(comps.items())},
            "by_priority": {str(p): summary_of(w) for p, w in sorted(prios.items(), reverse=True)},
            "rejected": rejected,
        },
    }
