"""A recording: the plain, JSON-able form of a window of recorded traffic.

`scheduler_core.traffic_record.TrafficRecorder.capture` copies a window's
data on the scheduler's loop into a `Capture` (picklable);
`recording_of(capture)` turns it into a recording wherever the caller likes
(the simulation worker process), which `scheduler_core.whatif_workload`
replays and `GET /api/v1/recording/` hands out. Its keys: `window_seconds`,
`bucket_seconds`, `epoch_seconds`, `warmup_seconds`, `recorded_at`, `keys`
(per tenant, component and priority: `counts` as [bucket offset, n], with
negative offsets for the warm-up, `samples` and, when actors sent any,
`actors`), `dropped`,
`service_seconds` (per component: [minute start offset, histogram]) and
`measured` (waits by component and priority, rejections). The service adds
`fleet`, `windows` and, for `recording/`, `config`.

`format` is `RECORDING_FORMAT`. Format 2 samples' `headers` carry, beside
the three the rules read, the actor path a request was sent with, as the
live `actor_path_header` with the path `|`-joined (`actor_value`), and the
same value as `actor`; a key's `actors` count, per epoch (`epoch`, as the
samples'), its arrivals by that value (`counts`, "" for none) and those of
actors past the bound (`other`). The path is every level sent (bounded as
at admission); recordings taken before that was so hold the path cut to
the live `max_queue_hierarchy_levels`, in the same shape, and replay alike,
no deeper than they hold. Format 1 (the fixture
`tests/scheduler_core/fixtures/demo_window.json`) has neither, and replays
every request in its tenant's own queue, as it was read then.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any, TypeAlias

from scheduler_core.actor_path import MAX_ACTOR_SEGMENTS, MAX_SEGMENT_LENGTH, parse_actor_path
from scheduler_core.stats import WaitHistogram
from scheduler_core.traffic_minutes import MinuteCopy, WaitCopy

__all__ = [
    "MAX_WARMUP_SECONDS",
    "RECORDING_FORMAT",
    "WARMUP_SECONDS",
    "Capture",
    "KeyCopy",
    "WaitCopy",
    "actor_value",
    "recording_of",
    "summary_of",
]

# 2: samples' headers carry the actor path (see the module doc).
RECORDING_FORMAT = 2
# Recorded time replayed before a window, so it starts with the queue it
# had: at least a minute, more to reach back to where the backlog queued
# at the window's start began (`TrafficRecorder.capture`), up to ten minutes.
WARMUP_SECONDS = 60
MAX_WARMUP_SECONDS = 600

# (tenant, component, priority, count ring, last bucket, [(epoch start, sample)],
#  [(epoch start, arrivals, {actor path: arrivals})])
KeyCopy: TypeAlias = (  # a string: `array` takes no subscript at run time before 3.12
    "tuple[str, str, int, array[int], int, list[tuple[int, dict[str, Any]]],"
    " list[tuple[int, int, dict[str, int]]]]"
)
# The longest value a path parsed at admission joins to.
_MAX_ACTOR_VALUE = MAX_ACTOR_SEGMENTS * (MAX_SEGMENT_LENGTH + 1)


def actor_value(path: tuple[str, ...]) -> str:
    """An actor path as the header value naming it ("" for none), bounded as at admission.

    A path parsed at admission is within the bounds already and is only
    joined (it parses back to itself); a longer one is parsed again.
    """
    value = "|".join(path)
    if len(path) > MAX_ACTOR_SEGMENTS or len(value) > _MAX_ACTOR_VALUE:
        value = "|".join(parse_actor_path(value))
    return value


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
    keys: list[KeyCopy]
    epoch_seconds: int
    dropped: tuple[array[int], int]
    minutes: list[MinuteCopy]


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


def _actors(
    tallies: list[tuple[int, int, dict[str, int]]], start: int, early: int, width: int
) -> list[dict[str, Any]]:
    """The epochs' arrivals by actor path ("" none; `other`: actors past the tally's bound).

    Only epochs overlapping the window, and only those some actor sent in.
    """
    out = []
    for epoch, seen, tally in tallies:
        other = seen - sum(tally.values())
        if epoch + width > early and (other or any(tally)):
            out.append(
                {"epoch": epoch - start, "counts": dict(sorted(tally.items())), "other": other}
            )
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
    for tenant, component, priority, counts, last, sampled, tallies in capture.keys:
        ring = _ring(counts, last, capture)
        # Samples of the epochs overlapping the window, each with its epoch's
        # start in window seconds (negative: it began before the window).
        samples = [
            {**sample, "epoch": epoch - start}
            for epoch, sample in sampled
            if epoch + capture.epoch_seconds > early
        ]
        if ring and samples:
            key = {
                "tenant": tenant,
                "component": component,
                "priority": priority,
                "counts": ring,
                "samples": samples,
            }
            actors = _actors(tallies, start, early, capture.epoch_seconds)
            if actors:
                key["actors"] = actors
            keys.append(key)
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
