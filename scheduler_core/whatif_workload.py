"""The what-if simulator's workload model, and the `recent` workload (recorded traffic).

A workload is a config-independent list of arrivals: each arrival is a
*kind* (a tenant and the classification inputs of one query, or a fixed
component), an arrival time and a service-time quantile. The simulator
classifies each kind under each config with the real classifier and
priority rules, and turns the quantile into a service time through the
workload's service model for the component the kind gets, so the live and
the proposed config see the very same arrivals and the same draws.

`recent` (`recent_workload`) replays a recording of the live scheduler
(`scheduler_core.traffic_record`): each 5-second bucket's arrivals of each
(tenant, component, priority) come back with the same count, at uniformly
drawn instants within the bucket, each taking one of the queries sampled
for that key in the 5-minute epoch the bucket belongs to, with its headers:
the actor header among them puts it in the actor sub-queue it was recorded
in, or, under a proposed `actor_path_header` or depth, where that would
(`scheduler_core.whatif` reads it as admission does). Service times
are drawn from the histogram of the minute being replayed, for the
component the request gets under the simulated config (the whole window's
histogram for that component when that minute has none, all components'
when the component had none at all). The fleet is the one
connected when the recording was taken. The replay starts with the
recording's warm-up (the minute before the window), which is not
measured, so the window begins with the backlog it really had. The named
scenarios are in `scheduler_core.whatif_scenarios`.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import accumulate
from typing import Any

from scheduler_core.classify import classify
from scheduler_core.model import COMPONENTS, QueueConfig, TenantLimits
from scheduler_core.recording import RECORDING_FORMAT
from scheduler_core.stats import bucket_bounds
from scheduler_core.validation import queue_config_to_dict, tenant_limits_to_dict
from scheduler_core.whatif_engine import US

__all__ = [
    "MAX_REQUESTS",
    "ConfigSet",
    "Kind",
    "Knobs",
    "ServiceModel",
    "Workload",
    "WorkloadError",
    "check_size",
    "recent_workload",
    "resize_fleet",
    "service_factor",
]

# At most this many arrivals per config: with two configs and the engine's
# speed on this machine class (>= 20,000 requests per second of wall time)
# a run stays well inside the call's time limit.
MAX_REQUESTS = 600_000


@dataclass(frozen=True, slots=True)
class ConfigSet:
    """The values one simulated scheduler runs: settings and per-tenant limits."""

    config: QueueConfig
    limits: Mapping[str, TenantLimits]

    def raw(self) -> dict[str, Any]:
        """Both as the store spells them (for the response's `workload.config`)."""
        return {
            "settings": queue_config_to_dict(self.config),
            "tenants": {t: tenant_limits_to_dict(v) for t, v in sorted(self.limits.items())},
        }


class WorkloadError(Exception):
    """The workload cannot be built as asked; `path` names the field to change.

    `prefix` holds path parts that are names, not dotted paths (a tenant ID
    may hold dots): `path` is under them.
    """

    def __init__(self, path: str, message: str, prefix: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.path = path
        self.prefix = prefix


@dataclass(frozen=True, slots=True)
class Knobs:
    """What the operator varies; None means the workload's own value."""

    arrival_factor: float = 1.0
    service_factor: Mapping[str, float] = field(default_factory=dict)
    queriers: int | None = None
    duration_seconds: float | None = None
    slow_share: float | None = None


@dataclass(frozen=True, slots=True)
class Kind:
    """What the classifier sees of one sort of request; `hint` fixes its component."""

    tenant_id: str
    hint: str | None = None
    query: str = ""
    api_type: str = "query"
    start: float | None = None
    end: float | None = None
    step: float | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    now: float = 0.0


# (component, quantile in [0, 1), replayed second) -> service microseconds
ServiceModel = Callable[[str, float, int], int]


@dataclass(slots=True)
class Workload:
    """Arrivals (parallel lists, in time order) plus the fleet and service model."""

    kinds: list[Kind]
    times: list[int]
    kind_of: list[int]
    quantiles: list[float]
    seconds: list[int]
    service: ServiceModel
    fleet: list[tuple[str, int]]
    description: dict[str, Any]
    duration_seconds: float | None = None
    start_after_arrivals_at_zero: bool = False
    # Arrivals before this instant are a warm-up, not measured (see the engine).
    measure_from_us: int = 0


def service_factor(knobs: Knobs, component: str) -> float:
    return float(knobs.service_factor.get(component, 1.0))


# What to change, by the field a too-large run is refused at.
_SHRINK = {
    "knobs.duration_seconds": "shorten duration_seconds or lower arrival_factor",
    "knobs.arrival_factor": "lower arrival_factor or shorten duration_seconds",
    "workload.window_seconds": "pick a shorter window or lower arrival_factor",
}


def check_size(expected: float, knobs: Knobs, own_seconds: float | None, own_path: str) -> None:
    """Refuse a run of more than `MAX_REQUESTS` arrivals, at the field that made it so.

    The error goes where the operator will look: the duration when they
    lengthened the workload past its own `own_seconds` (None: it has no
    duration to lengthen), else the arrival factor when they raised it,
    else `own_path`, the workload's own size (a busy replica's hour): the
    page marks the box the operator typed into, not a blank Duration box.
    """
    if expected <= MAX_REQUESTS:
        return
    if own_seconds is not None and (knobs.duration_seconds or 0.0) > own_seconds:
        path = "knobs.duration_seconds"
    elif knobs.arrival_factor > 1.0:
        path = "knobs.arrival_factor"
    else:
        path = own_path
    raise WorkloadError(
        path,
        f"this would simulate about {expected:,.0f} requests per config, at most "
        f"{MAX_REQUESTS:,}: {_SHRINK[path]}",
    )


def resize_fleet(fleet: Sequence[tuple[str, int]], wanted: int | None) -> list[tuple[str, int]]:
    """The fleet with queriers removed from its end or added (as `sim-querier-N`)."""
    out = list(fleet)
    if wanted is None:
        return out
    common = Counter(workers for _, workers in out).most_common(1)
    workers = common[0][0] if common else 4
    del out[wanted:]
    n = 1
    while len(out) < wanted:
        name = f"sim-querier-{n}"
        n += 1
        if all(q != name for q, _ in out):
            out.append((name, workers))
    return out


# -- service models ---------------------------------------------------------------


class _HistogramService:
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


# -- recent -----------------------------------------------------------------------


def _scaled(n: int, factor: float, rng: random.Random) -> int:
    """n x factor arrivals, the fraction rounded by a draw (exact when factor is 1)."""
    scaled = n * factor
    whole = int(scaled)
    return whole + (1 if rng.random() < scaled - whole else 0)


def _sample_kind(
    tenant: str, component: str, sample: Mapping[str, Any], windows: tuple[float, float]
) -> Kind:
    """One recorded request as a kind; its component is a hint if the frontend named it."""
    headers = {str(k): str(v) for k, v in (sample.get("headers") or {}).items()}
    kind = Kind(
        tenant_id=tenant,
        query=str(sample.get("query") or ""),
        api_type=str(sample.get("api_type") or "query"),
        start=sample.get("start"),
        end=sample.get("end"),
        step=sample.get("step"),
        headers=headers,
        now=float(sample.get("now") or 0.0),
    )
    found = classify(
        query=kind.query,
        api_type=kind.api_type,
        start=kind.start,
        end=kind.end,
        step=kind.step,
        headers=headers,
        now=kind.now,
        query_ingesters_within=windows[0],
        query_store_after=windows[1],
    )
    return kind if found.component == component else replace(kind, hint=component)


# An epoch's samples grouped by actor, with the groups' cumulative weights.
_Strata = tuple[list[float], list[list[int]]]


def _strata(
    by_actor: Mapping[str, list[int]],
    tally: Mapping[str, Any] | None,
    anywhen: Mapping[str, list[int]],
) -> _Strata:
    """Samples (kind indices) by actor, weighted by the epoch's arrivals of each actor.

    An actor counted in the epoch with no sample in it replays the key's
    samples of that actor from other epochs (a reservoir of 16 misses an
    actor with a fifth of the arrivals once in 35 epochs, and its turns in
    the sub-queues go with it); one with none at all is left out, its
    arrivals going to the others in proportion. Samples of actors past the
    tally's bound share its `other` arrivals. With no counts (a format 1
    recording, an epoch no actor sent in) it is one group: every sample alike.
    """
    counts = tally["counts"] if tally else {}
    groups = [
        (float(n), by_actor.get(actor) or anywhen.get(actor, [])) for actor, n in counts.items()
    ]
    other = [i for actor, kinds in by_actor.items() if actor not in counts for i in kinds]
    if other:
        groups.append((float(tally["other"]) if tally else 0.0, other))
    groups = [(weight, kinds) for weight, kinds in groups if weight > 0 and kinds]
    if not groups:
        return [1.0], [[i for kinds in by_actor.values() for i in kinds]]
    return list(accumulate(weight for weight, _ in groups)), [kinds for _, kinds in groups]


def recent_workload(recording: Mapping[str, Any], knobs: Knobs, seed: int) -> Workload:
    """Replay a recording (see the module doc); deterministic for the seed."""
    if int(recording.get("format", 1)) > RECORDING_FORMAT:
        raise WorkloadError(
            "workload", f"recording format {recording['format']} is newer than this server's"
        )
    window = int(recording["window_seconds"])
    width = int(recording["bucket_seconds"])
    warm = int(recording.get("warmup_seconds", 0)) // width
    duration = float(knobs.duration_seconds or window)
    recorded, simulated = window // width, math.ceil(duration / width)
    keys = recording["keys"]
    offered = sum(n for key in keys for offset, n in key["counts"] if offset >= 0)
    expected = offered * knobs.arrival_factor * (duration + warm * width) / window
    check_size(expected, knobs, window, "workload.window_seconds")
    fleet = resize_fleet([(str(q), int(w)) for q, w in recording.get("fleet", ())], knobs.queriers)
    if not fleet:
        raise WorkloadError("knobs.queriers", "no querier was connected: set knobs.queriers")
    # The classifier's windows when the recording was taken: a request whose
    # recorded component differs from what they give was named by its frontend.
    recorded_windows = recording.get("windows") or {}
    windows = (
        float(recorded_windows.get("query_ingesters_within", 13 * 3600.0)),
        float(recorded_windows.get("query_store_after", 12 * 3600.0)),
    )
    kinds: list[Kind] = []
    # Per key: its epochs' starts (window seconds) and each epoch's strata.
    key_epochs: list[tuple[list[float], list[_Strata]]] = []
    per_bucket: dict[int, list[tuple[int, int]]] = {}
    for k, key in enumerate(keys):
        epochs: dict[float, dict[str, list[int]]] = {}
        for sample in key["samples"]:
            by_actor = epochs.setdefault(float(sample.get("epoch", 0.0)), {})
            by_actor.setdefault(str(sample.get("actor", "")), []).append(len(kinds))
            kinds.append(_sample_kind(key["tenant"], key["component"], sample, windows))
        tallies = {float(t["epoch"]): t for t in key.get("actors", ())}
        anywhen: dict[str, list[int]] = {}
        for by_actor in epochs.values():
            for actor, picks in by_actor.items():
                anywhen.setdefault(actor, []).extend(picks)
        starts = sorted(epochs)
        strata = [_strata(epochs[e], tallies.get(e), anywhen) for e in starts]
        key_epochs.append((starts, strata))
        for offset, n in key["counts"]:
            if -warm <= offset < recorded and starts:
                per_bucket.setdefault(int(offset), []).append((k, int(n)))
    rng = random.Random(seed)
    times: list[int] = []
    kind_of: list[int] = []
    quantiles: list[float] = []
    seconds: list[int] = []
    # Simulated bucket j (negative: the warm-up) replays recorded bucket
    # `source`: the last `duration` of the window, or the window over and
    # over when the duration is longer; the warm-up replays what came just
    # before. Time 0 is the warm-up's start.
    measure_from = warm * width * US
    end_us = measure_from + round(duration * US)
    for j in range(-warm, simulated):
        if simulated <= recorded or j < 0:
            source = recorded - simulated + j if simulated <= recorded else j
        else:
            source = j % recorded
        batch: list[tuple[int, int, float]] = []
        for k, n in per_bucket.get(source, ()):
            # The queries of the epoch this bucket was recorded in.
            starts, strata = key_epochs[k]
            cumulative, groups = strata[max(0, bisect_right(starts, source * width) - 1)]
            for _ in range(_scaled(n, knobs.arrival_factor, rng)):
                at = round((j + warm + rng.random()) * width * US)
                choices = groups[0]
                if len(groups) > 1:  # the actor first, by the counts
                    choices = groups[bisect_right(cumulative, rng.random() * cumulative[-1])]
                pick = choices[rng.randrange(len(choices))]
                batch.append((at, pick, rng.random()))
        batch.sort()
        for at, pick, u in batch:
            if at < end_us:
                times.append(at)
                kind_of.append(pick)
                quantiles.append(u)
                seconds.append(source * width)
    measured = recording.get("measured")
    return Workload(
        kinds=kinds,
        times=times,
        kind_of=kind_of,
        quantiles=quantiles,
        seconds=seconds,
        service=_HistogramService(recording.get("service_seconds") or {}, knobs),
        fleet=fleet,
        duration_seconds=duration,
        measure_from_us=measure_from,
        description={
            "kind": "recent",
            "window_seconds": window,
            "warmup_seconds": warm * width,
            "duration_seconds": duration,
            "requests": sum(1 for at in times if at >= measure_from),
            "tenants": len({key["tenant"] for key in keys}),
            "dropped": int(recording.get("dropped", 0)),
            "queriers": len(fleet),
            "workers": sum(w for _, w in fleet),
            "measured": measured,
        },
    )
