"""What the what-if simulator needs of the live traffic, recorded as a runtime observer.

`TrafficRecorder` hangs on the runtime's observer fan-out (as `RollingStats`
does) and keeps, for the last `horizon_seconds` (an hour), bounded in memory
whatever the request rate:

- arrivals per (tenant, component, priority) in 5-second buckets: one ring
  array of counts per key, at most `max_keys` keys (further keys are counted
  as `dropped`, and said so in the export; a key with no arrival for a whole
  horizon is forgotten to make room, so a long-lived replica's past tenants
  and priorities do not crowd out today's); a refused request (429) counts
  as an arrival, since it was offered load;
- per key and 5-minute epoch, a uniform sample (reservoir, seeded) of
  `samples_per_epoch` requests' classification inputs (query, API type,
  time range, step, the three headers the rules read, and the wall time it
  came), so a proposed rule re-prioritises them with the real classifier and
  each part of the window replays the queries of its own epoch. A request
  that waited in an actor sub-queue keeps its actor path too, as the header
  it came in (`actor_path_header()`, the one admission read it from) with
  the path `|`-joined: the replay derives the path from the headers as
  admission does (`actor_path_from_headers`) under each simulated config,
  so a proposed header name or depth places it as the doors would. The path
  is bounded as at admission (`parse_actor_path`: 10 segments of 200
  characters). Their text
  is held to `max_sample_bytes` in all (as the dry run's sample is): past
  it an epoch's reservoir keeps its first request, so every key still
  replays, and takes others only in place of one as large or larger;
- per minute and component, a log-scale histogram of service times measured
  from dispatch to result (`on_dispatched` -> `on_completed`; cancelled or
  failed runs are not service times), and the queue waits the scheduler
  measured, by component and by priority, with their sums for the mean.

The actor path rides in the samples, not in the key: actors are open-ended
(one per user, dashboard or job) and a key costs a ring of `slots` counts,
so keys per actor would fill `max_keys` and drop whole arrivals, where the
sub-queues only decide who *within* a (tenant, component, priority) goes
next. That needs each key's actor mix, and 16 samples give it too coarsely
(a 60/40 mix comes out anywhere from 40/60 to 80/20, and the backlog of the
busier actor with it), so each key's epoch also counts its arrivals by
actor path exactly (`max_actors_per_epoch` paths, their text in the
`max_sample_bytes` budget; arrivals of further actors are counted as
`other`), and the replay draws the actor by those counts, then a sample
of that actor (`whatif_workload`; the key's samples of that actor from
other epochs when this one has none). What it loses is one actor's bursts
inside an epoch and an actor never sampled in the window (its arrivals go
to the sampled actors, in proportion). The path recorded is the one the
queue placed, already cut to the live
`max_queue_hierarchy_levels` (the queue cuts it on the request): a
proposal of more levels replays no deeper than the live config queued.

Clocks are injected (monotonic for buckets, wall for the samples' "now").
`capture(window_seconds)` copies what a window needs, cheaply, on the
scheduler's loop; `recording_of(capture)` turns it into plain JSON-able
data (a *recording*) wherever the caller likes (the simulation worker
process); the workload model (`scheduler_core.whatif_workload`) reads it.
"""

from __future__ import annotations

import math
import random
import time
from array import array
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from scheduler_core.actor_path import DEFAULT_ACTOR_PATH_HEADER
from scheduler_core.model import Request
from scheduler_core.recording import (
    RECORDING_FORMAT,
    Capture,
    actor_value,
    recording_of,
    summary_of,
)
from scheduler_core.stats import WaitHistogram
from scheduler_core.traffic import DEFAULT_MAX_BYTES, ENTRY_OVERHEAD

__all__ = [
    "RECORDING_FORMAT",
    "WARMUP_SECONDS",
    "Capture",
    "TrafficRecorder",
    "recording_of",
    "summary_of",
]

# Recorded time replayed before a window, so it starts with the queue it had.
WARMUP_SECONDS = 60
_HEADERS = ("User-Agent", "X-Dashboard-Uid", "X-Panel-Id")
# What one actor's count costs besides its text (a dict entry and an int).
_TALLY_OVERHEAD = 100


def _held(epoch: list[Any]) -> int:
    """The bytes of `sample_bytes` one epoch holds: its samples and its actor counts."""
    sizes: list[int] = epoch[3]
    held: int = epoch[5]
    return sum(sizes) + held


@dataclass(slots=True)
class _Key:
    """One (tenant, component, priority): its count ring and sampled requests.

    `epochs` holds, per epoch still in the horizon, [epoch index, requests
    seen in it, the reservoir of samples, their sizes, arrivals by actor
    path ("" none), the bytes that tally holds].
    """

    tenant_id: str
    component: str
    priority: int
    counts: array[int]
    last_bucket: int
    epochs: deque[list[Any]]


@dataclass(slots=True)
class _Waits:
    hist: WaitHistogram = field(default_factory=WaitHistogram)
    total: float = 0.0

    def add(self, seconds: float) -> None:
        self.hist.add(seconds)
        self.total += seconds


@dataclass(slots=True)
class _Minute:
    minute: int
    service: dict[str, WaitHistogram] = field(default_factory=dict)
    by_component: dict[str, _Waits] = field(default_factory=dict)
    by_priority: dict[int, _Waits] = field(default_factory=dict)
    rejected: int = 0


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
        # The header admission reads actor paths from now (the live setting).
        self._actor_header = actor_path_header
        self.horizon_seconds = horizon_seconds
        self.bucket_seconds = bucket_seconds
        self.slots = horizon_seconds // bucket_seconds
        self.max_keys = max_keys
        self.samples_per_epoch = samples_per_epoch
        self.max_actors_per_epoch = max_actors_per_epoch
        self.max_sample_bytes = max_sample_bytes
        self.sample_bytes = 0  # the sampled requests' size, as `ENTRY_OVERHEAD` + text
        self.epoch_seconds = epoch_seconds
        self._epochs_kept = max(1, math.ceil(horizon_seconds / epoch_seconds))
        self._rng = random.Random(seed)
        self._keys: dict[tuple[str, str, int], _Key] = {}
        self._dropped = _Key("", "", 0, array("I", bytes(4 * self.slots)), 0, deque())
        self._swept_bucket = -1
        self._minutes: deque[_Minute] = deque()
        self._dispatched_at: dict[str, float] = {}
        # Nothing was recorded before this: a window reaching further back
        # starts here instead (see `capture`).
        self._started = clock()

    # -- observer hooks --------------------------------------------------------

    def on_enqueued(self, request: Request) -> None:
        self._arrival(request)

    def on_rejected(self, request: Request, reason: str) -> None:
        self._arrival(request)
        self._minute(self._clock()).rejected += 1

    def on_dispatched(self, request: Request, querier_id: str, worker_id: int, wait: float) -> None:
        now = self._clock()
        self._dispatched_at[request.id] = now
        minute = self._minute(now)
        waits = minute.by_component.get(request.component)
        if waits is None:
            waits = minute.by_component[request.component] = _Waits()
        waits.add(wait)
        waits = minute.by_priority.get(request.priority)
        if waits is None:
            waits = minute.by_priority[request.priority] = _Waits()
        waits.add(wait)

    def on_completed(self, request: Request) -> None:
        started = self._dispatched_at.pop(request.id, None)
        if started is None:
            return
        now = self._clock()
        service = self._minute(now).service
        hist = service.get(request.component)
        if hist is None:
            hist = service[request.component] = WaitHistogram()
        hist.add(max(0.0, now - started))

    def on_cancelled(self, request: Request) -> None:
        self._dispatched_at.pop(request.id, None)

    def on_failed(self, request: Request, reason: str) -> None:
        self._dispatched_at.pop(request.id, None)

    # -- export ------------------------------------------------------------------

    def capture(self, window_seconds: int, warmup_seconds: int = WARMUP_SECONDS) -> Capture:
        """Copies of what the last `window_seconds` need: cheap, for the scheduler's loop.

        The window starts at a whole minute (so it spans `window_seconds` to
        a minute more), where the per-minute waits start too, and up to
        `warmup_seconds` recorded before it come along as a warm-up: the
        replay starts there, so the window begins with the queue it had. A
        recorder younger than the window starts it at the minute recording
        began: time nobody recorded would replay as an idle fleet, and
        thin out the rates and utilisation the simulator reports.
        Turning it into a recording (`recording_of`) is left to the caller,
        which runs it away from the loop (the simulation worker process).
        """
        width = self.bucket_seconds
        window = max(60, min(int(window_seconds), self.horizon_seconds - 60))
        now = self._clock()
        current = int(now // width)
        start = int(math.floor(max(now - window, self._started) / 60.0)) * 60
        first = start // width
        oldest = current - self.slots + 1
        # The warm-up holds recorded time only: before the recorder began it
        # is empty, and would be reported (and sized) as a minute replayed.
        began = min(first, int(self._started // width))
        warm_first = max(oldest, began, first - max(0, int(warmup_seconds)) // width)
        early = warm_first * width
        keys = [
            (
                k.tenant_id,
                k.component,
                k.priority,
                k.counts[:],
                k.last_bucket,
                [(e[0] * self.epoch_seconds, x) for e in k.epochs for x in e[2]],
                [(e[0] * self.epoch_seconds, e[1], dict(e[4])) for e in k.epochs],
            )
            for k in self._keys.values()
            if k.last_bucket >= warm_first
        ]
        minutes = [
            (
                m.minute,
                {c: (h.counts.copy(), h.max) for c, h in m.service.items()},
                {c: (w.hist.counts.copy(), w.hist.max, w.total) for c, w in m.by_component.items()},
                {p: (w.hist.counts.copy(), w.hist.max, w.total) for p, w in m.by_priority.items()},
                m.rejected,
            )
            for m in self._minutes
            if (m.minute + 1) * 60 > early
        ]
        dropped = (self._dropped.counts[:], self._dropped.last_bucket)
        return Capture(
            self.bucket_seconds,
            self.slots,
            first,
            current,
            warm_first,
            self._wall(),
            keys,
            self.epoch_seconds,
            dropped,
            minutes,
        )

    def export(self, window_seconds: int) -> dict[str, Any]:
        """The last `window_seconds` as a recording: `recording_of(capture(...))`."""
        return recording_of(self.capture(window_seconds))

    # -- internals ---------------------------------------------------------------

    def _arrival(self, request: Request) -> None:
        now = self._clock()
        bucket = int(now // self.bucket_seconds)
        ident = (request.tenant_id, request.component, request.priority)
        key = self._keys.get(ident)
        if key is None:
            if len(self._keys) >= self.max_keys and not self._forget_idle(bucket):
                self._count(self._dropped, bucket)
                return
            key = _Key(
                request.tenant_id,
                request.component,
                request.priority,
                array("I", bytes(4 * self.slots)),
                bucket,
                deque(),
            )
            self._keys[ident] = key
        self._count(key, bucket)
        self._sample(key, request, now)

    def _sample(self, key: _Key, request: Request, now: float) -> None:
        """Reservoir-sample the request into its key's current epoch."""
        epoch = int(now // self.epoch_seconds)
        epochs = key.epochs
        if not epochs or epochs[-1][0] != epoch:
            if len(epochs) >= self._epochs_kept:
                self.sample_bytes -= _held(epochs.popleft())
            epochs.append([epoch, 0, [], [], {}, 0])
        current = epochs[-1]
        current[1] += 1
        actor = actor_value(request.actor_path)
        tally: dict[str, int] = current[4]
        if actor in tally:
            tally[actor] += 1
        elif not actor:  # one entry per epoch, as the epoch's own record: not text
            tally[actor] = 1
        elif len(tally) - ("" in tally) < self.max_actors_per_epoch:
            size = _TALLY_OVERHEAD + len(actor)
            if self.sample_bytes + size <= self.max_sample_bytes:
                tally[actor] = 1
                current[5] += size
                self.sample_bytes += size
        reservoir: list[dict[str, Any]] = current[2]
        sizes: list[int] = current[3]
        if len(reservoir) < self.samples_per_epoch:
            slot = len(reservoir)
        else:
            slot = self._rng.randrange(current[1])
            if slot >= self.samples_per_epoch:
                return
        kept = self._kept_headers(request, actor)
        size = ENTRY_OVERHEAD + len(request.query) + sum(map(len, kept.values()))
        old = sizes[slot] if slot < len(sizes) else 0
        # Past the budget only what replaces as much text may come in; an
        # empty reservoir takes its first, or the key's arrivals had no query.
        if reservoir and self.sample_bytes + size - old > self.max_sample_bytes:
            return
        if slot == len(reservoir):
            reservoir.append({})
            sizes.append(0)
        self.sample_bytes += size - old
        sizes[slot] = size
        reservoir[slot] = {
            "query": request.query,
            "api_type": request.api_type,
            "start": request.start,
            "end": request.end,
            "step": request.step,
            "headers": kept,
            "now": self._wall(),
        }
        if actor:
            reservoir[slot]["actor"] = actor

    def _kept_headers(self, request: Request, actor: str) -> dict[str, str]:
        """The headers the rules read, and the actor header with the path it placed.

        A recorded header of the same name (an actor header set to one the
        rules read) is the raw value admission parsed, and stays.
        """
        headers = request.headers
        kept = {h: headers[h] for h in _HEADERS if headers.get(h)}
        if actor:
            name = self._actor_header()
            if name.lower() not in {h.lower() for h in kept}:
                kept[name] = actor
        return kept

    def _forget_idle(self, bucket: int) -> bool:
        """Forget the keys with no arrival for a horizon; True if that made room for one.

        Such a key has nothing a window can reach. Looked for at most once a
        bucket, so a recorder full of live keys pays the scan every 5 s, not
        on every request of a new key.
        """
        if bucket == self._swept_bucket:
            return False
        self._swept_bucket = bucket
        idle = [
            ident for ident, key in self._keys.items() if key.last_bucket <= bucket - self.slots
        ]
        for ident in idle:
            self.sample_bytes -= sum(map(_held, self._keys.pop(ident).epochs))
        return len(self._keys) < self.max_keys

    def _count(self, key: _Key, bucket: int) -> None:
        slots = self.slots
        if bucket != key.last_bucket:
            # Zero the slots of the buckets this key skipped since it was
            # last touched, so a slot never carries a count from an hour ago.
            for skipped in range(key.last_bucket + 1, min(bucket, key.last_bucket + slots) + 1):
                key.counts[skipped % slots] = 0
            key.last_bucket = bucket
        key.counts[bucket % slots] += 1

    def _minute(self, now: float) -> _Minute:
        index = int(math.floor(now / 60.0))
        minutes = self._minutes
        if minutes and minutes[-1].minute == index:
            return minutes[-1]
        if minutes and minutes[-1].minute > index:
            # A clock read out of order (callers replaying events): find its minute.
            for minute in reversed(minutes):
                if minute.minute == index:
                    return minute
                if minute.minute < index:
                    break
            return _Minute(index)  # older than what is kept, or a gap: not recorded
        oldest = index - self.horizon_seconds // 60
        while minutes and minutes[0].minute < oldest:
            minutes.popleft()
        minute = _Minute(index)
        minutes.append(minute)
        return minute
