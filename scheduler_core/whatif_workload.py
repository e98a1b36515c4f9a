"""The `recent` workload: a recording of the live scheduler, replayed.

`recent_workload` replays a recording (`scheduler_core.recording`, taken
by `scheduler_core.traffic_record`): each 5-second bucket's arrivals of
each (tenant, component, priority) come back with the same count, at
uniformly drawn instants within the bucket, each taking one of the
queries sampled for that key in the 5-minute epoch the bucket belongs to,
with its headers. The actor is drawn first, by the epoch's arrivals per
actor path, then a sample of that actor. The actor header among the
headers holds the path as it was sent, every level: each simulated config
reads it as admission does (its own `actor_path_header`) and its queue
places it by its own `max_queue_hierarchy_levels`
(`scheduler_core.whatif`), so a proposal of more levels than live is
fair between the actors live lumped together. Service times come from
the recorded histograms (`whatif_service.HistogramService`). The fleet is
the one connected when the recording was taken. The replay starts with
the recording's warm-up (the minute before the window, or up to ten when
the backlog at its start was older: `TrafficRecorder.capture`), so the
window begins with the backlog it really had; the waits counted are those
of the dispatches made in the window, as the scheduler measured them (the
engine's `measure_until_us`). With `knobs.start_from` "live" the proposal's
run replays the warm-up under the live config and applies the proposal at
the window's start, as a save now would (`scheduler_core.whatif`).

The workload model itself (`Kind`, `Workload`, `Knobs`, `ConfigSet`, ...)
is `scheduler_core.whatif_model`.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import replace
from itertools import accumulate
from typing import Any

from scheduler_core.classify import classify
from scheduler_core.recording import RECORDING_FORMAT, WARMUP_SECONDS
from scheduler_core.whatif_engine import US
from scheduler_core.whatif_model import (
    MAX_REQUESTS,
    Kind,
    Knobs,
    Workload,
    WorkloadError,
    check_size,
    resize_fleet,
)
from scheduler_core.whatif_service import HistogramService

__all__ = ["recent_workload"]


def _scaled(n: int, factor: float, rng: random.Random) -> int:
    """n x factor arrivals, the fraction rounded by a draw (exact when factor is 1)."""
    scaled = n * factor
    whole = int(scaled)
    return whole + (1 if rng.random() < scaled - whole else 0)


def _fitting_warmup(warm: int, per_second: float, duration: float, width: int) -> int:
    """The recording's warm-up (in buckets), cut so the run stays within `MAX_REQUESTS`.

    A warm-up reaching back minutes (to where a backlog began) is worth
    its arrivals only while the run may go ahead: past the bound it is cut
    to what fits, no shorter than the minute every recording has, so a
    window that ran before warm-ups grew still runs. The replay keeps its
    most recent part.
    """
    if per_second <= 0:
        return warm
    room = math.floor((MAX_REQUESTS / per_second - duration) / width)
    return max(min(warm, WARMUP_SECONDS // width), min(warm, room))


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
    duration = float(knobs.duration_seconds or window)
    recorded, simulated = window // width, math.ceil(duration / width)
    keys = recording["keys"]
    offered = sum(n for key in keys for offset, n in key["counts"] if offset >= 0)
    per_second = offered * knobs.arrival_factor / window
    warm = int(recording.get("warmup_seconds", 0)) // width
    warm = _fitting_warmup(warm, per_second, duration, width)
    expected = per_second * (duration + warm * width)
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
        service=HistogramService(recording.get("service_seconds") or {}, knobs),
        fleet=fleet,
        duration_seconds=duration,
        measure_from_us=measure_from,
        # Waits as the scheduler measured the window: of its dispatches.
        measure_until_us=end_us,
        start_from=knobs.start_from,
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
            "start_from": knobs.start_from,
        },
    )
