"""The discrete-event engine both simulators run: the real queue on a virtual clock.

It drives a real `RequestQueue` (the same class the runtime owns, with the
same `QueueConfig` and `TenantLimits` values) the way `SchedulerRuntime`
does, with the clock replaced by a heap of events in integer microseconds,
so equal times tie exactly and a run is repeatable for its inputs:

- a request is enqueued at its arrival time (a `TooManyRequests` is a 429,
  counted, as the runtime's frontends see it), and handed at once to the
  workers waiting for work, in the order they started waiting (the
  runtime's `_dispatch_pass`);
- a worker that finishes completes its request and asks again at once with
  its own `last_tenant_index` (the runtime's `next_request`); a worker that
  gets nothing joins the back of the waiting line.

The dispatch pass after an arrival costs the workers that can take it, not
the fleet (`whatif_waiting`): the runtime's pass offers the queue to every
waiting worker in turn, but every one of them already found nothing it may
take in the queue before the arrival, so only the new request is takeable,
and only by a querier its tenant's shard and reservations let take it. The
first waiting worker of such a querier takes it and the pass is over; who
was waiting before it is passed over without a dequeue once its querier was
seen to refuse that (tenant, priority). The outcome is the runtime pass's
exactly (`tests/scheduler_core/test_whatif_engine_large_fleet.py` holds it
to that pass, `_OFFER_TO_EVERY_WAITER`).

Queue wait is measured when a worker takes the request, as the runtime's
`on_dispatched` measures it. Nothing about who is served first is decided
here: every choice is the queue's. `scheduler_core.simulate` (Mimir's
table) and `scheduler_core.whatif` (an operator's what-if) both run this.
"""

from __future__ import annotations

import heapq
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from scheduler_core.errors import TooManyRequests
from scheduler_core.model import QueueConfig, Request, TenantLimits
from scheduler_core.queue import RequestQueue
from scheduler_core.whatif_apply import ConfigChange, apply_change
from scheduler_core.whatif_waiting import Refusals, WaitingLine

__all__ = [
    "US",
    "EngineInput",
    "EngineResult",
    "SimulationCancelled",
    "SimulationTimeLimit",
    "run_engine",
]

US = 1_000_000  # virtual time unit: microseconds
_NO_HEADERS: Mapping[str, str] = MappingProxyType({})
# Wall clock, cancel and progress are looked at once per this much work
# (events, dequeues asked and waiting workers looked over, one each): often
# enough to stop within milliseconds, rarely enough to cost nothing. Counted
# by events alone, 4096 arrivals each offered to thousands of workers ran
# for seconds between two looks.
_CHECK_EVERY = 4096
# Points of the queue-length series, whatever the run's length: reaching it,
# the stride doubles and every other point taken goes, so the series still
# runs from the start to the end on an even grid, and ends with the end.
_MAX_SAMPLES = 5000
# The runtime's dispatch pass as it is written, every waiting worker asked
# in turn on every arrival (O(fleet) per arrival): tests set it to hold the
# pass the engine runs (the module doc) to it.
_OFFER_TO_EVERY_WAITER = False


class SimulationCancelled(Exception):
    """The caller asked the run to stop (`should_stop` returned True)."""


class SimulationTimeLimit(Exception):
    """The run passed its wall-clock deadline; about `done` of `total` events were run."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__(f"stopped at the time limit after {done} of about {total} events")
        self.done, self.total = done, total


@dataclass(slots=True)
class EngineInput:
    """One run: the config, the querier fleet and the arrivals (parallel lists).

    `times` are arrival times in microseconds, non-decreasing; request i is
    (`tenants[i]`, `components[i]`, `priorities[i]`), waits in the actor
    sub-queue `actor_paths[i]` (none when the list is empty; the queue cuts
    it to the config's `max_queue_hierarchy_levels`, as at admission) and
    keeps its worker busy for `services[i]` microseconds. `fleet` is
    (querier id, workers) in connection order; `worker_order_seed` shuffles
    which worker asks first.
    `start_after_arrivals_at_zero` enqueues every t=0 arrival before any
    worker asks (Mimir's benchmark); otherwise workers wait from the start,
    as connected queriers do before traffic comes.
    """

    config: QueueConfig
    limits: Mapping[str, TenantLimits]
    fleet: Sequence[tuple[str, int]]
    times: Sequence[int]
    tenants: Sequence[str]
    components: Sequence[str]
    priorities: Sequence[int]
    services: Sequence[int]
    actor_paths: Sequence[tuple[str, ...]] = ()
    worker_order_seed: int = 0
    start_after_arrivals_at_zero: bool = False
    keep_log: bool = False
    # Sample the queue length every this many microseconds (0: never).
    sample_every_us: int = 0
    # Arrivals before this instant are a warm-up: they load the queue as it
    # stood when the measured interval began, and are not counted; times in
    # the result (waits aside) are then measured from this instant.
    measure_from_us: int = 0
    # With an end, the waits counted are those of the dispatches made in
    # [measure_from_us, measure_until_us), whenever their requests arrived,
    # as the scheduler measures a window (`traffic_minutes`): a backlog's
    # warm-up requests dispatched in it count, and requests dispatched only
    # in the drain after the last arrival do not (a starved class would
    # otherwise be charged, at its longest waits, for requests the window
    # never served). None: every request arriving from `measure_from_us`
    # on, drained to the end (a benchmark's run).
    measure_until_us: int | None = None
    # "Apply now": at `measure_from_us` this config replaces `config` and
    # `limits` on the running queue as a live save does (`whatif_apply`),
    # before any event at that instant; what is queued keeps its place and
    # priority. The caller classifies arrivals from then on by it. None: one
    # config throughout.
    window_config: ConfigChange | None = None


@dataclass(slots=True)
class EngineResult:
    """What one run measured, in virtual seconds (waits) and counts."""

    enqueued: int = 0
    completed: int = 0
    left_queued: int = 0
    makespan: float = 0.0
    waits_by_priority: dict[int, list[float]] = field(default_factory=dict)
    waits_by_component: dict[str, list[float]] = field(default_factory=dict)
    waits_by_tenant: dict[str, list[float]] = field(default_factory=dict)
    rejected_by_tenant: Counter[str] = field(default_factory=Counter)
    busy_by_component: dict[str, float] = field(default_factory=dict)
    workers: int = 0
    reserved_queriers: tuple[str, ...] = ()
    reserved_idle_seconds: float = 0.0
    served_by: frozenset[str] = frozenset()
    log: list[tuple[str, str, float]] = field(default_factory=list)
    # (seconds, queued) from the start to `makespan` on an even grid, then
    # (makespan, queued at the end); at most `_MAX_SAMPLES` points.
    queue_length: list[tuple[float, int]] = field(default_factory=list)
    # With a window's end (`measure_until_us`): the requests still queued when
    # it ended, by priority. Their waits are not among the window's, so
    # without this a config that starves a class would read as serving it
    # quickly (only its few dispatches counted). None without an end.
    waiting_at_end: Counter[int] | None = None
    # Dequeues the engine asked of the queue (taken or not): its work.
    dequeue_attempts: int = 0


Progress = Callable[[float], None]
StopCheck = Callable[[], bool]


def _reserved_queriers(queue: RequestQueue) -> tuple[str, ...]:
    """The queriers reserved somewhere under the queue's limits now."""
    return tuple(q.querier_id for q in queue.snapshot().queriers if q.reservations)


def run_engine(
    run: EngineInput,
    *,
    deadline: float | None = None,
    should_stop: StopCheck | None = None,
    progress: Progress | None = None,
) -> EngineResult:
    """Run to the end: every arrival offered, every accepted request completed.

    `deadline` is a `time.monotonic()` instant; past it `SimulationTimeLimit`
    is raised. `should_stop()` True raises `SimulationCancelled`.
    `progress(fraction)` is told how far the run is. All three are looked
    at every `_CHECK_EVERY` units of work (an event, a dequeue asked, a
    waiting worker looked over), so a run stops soon after either however
    large its fleet.
    """
    now_box = [0]
    queue = RequestQueue(run.config, clock=lambda: now_box[0] / US)
    for tenant_id, limits in run.limits.items():
        queue.set_tenant_limits(tenant_id, limits)
    workers: list[tuple[str, int]] = [
        (querier, queue.connect_querier(querier))
        for querier, count in run.fleet
        for _ in range(count)
    ]
    reserved = _reserved_queriers(queue)
    out = EngineResult(workers=len(workers), reserved_queriers=reserved)
    n_workers = len(workers)
    # Each worker's querier as an index: who may take what is the querier's.
    querier_index: dict[str, int] = {}
    querier_of = [querier_index.setdefault(querier, len(querier_index)) for querier, _ in workers]
    n_queriers = len(querier_index)
    last_index = [-1] * n_workers
    in_flight: list[Request | None] = [None] * n_workers
    order = list(range(n_workers))
    random.Random(run.worker_order_seed ^ 0x5EED).shuffle(order)
    # Reserved-and-idle accounting, as the inspector defines it: a querier
    # reserved somewhere with no busy worker.
    busy_count: dict[str, int] = dict.fromkeys(reserved, 0)
    measure_from = run.measure_from_us
    measure_from_s = measure_from / US
    # Counted by dispatch in [measure_from, window_end) only with a window's end.
    waiting_at_end: Counter[int] | None = None
    window_end = 0
    if run.measure_until_us is not None:
        waiting_at_end, window_end = Counter(), run.measure_until_us
    out.waiting_at_end = waiting_at_end
    idle_since: dict[str, int] = dict.fromkeys(reserved, measure_from)
    idle_total = [0]
    by_priority = out.waits_by_priority
    by_component = out.waits_by_component
    by_tenant = out.waits_by_tenant
    busy_us: Counter[str] = Counter()
    served: set[str] = set()
    log = out.log if run.keep_log else None
    heap: list[tuple[int, int, int]] = []
    seq = 0
    attempts = 0  # dequeues asked: with the line's `looked`, the work besides events
    dequeue, complete, enqueue = queue.dequeue, queue.complete, queue.enqueue

    def take(w: int) -> bool:
        """Worker `w` asks for work; True if it got some."""
        nonlocal seq, attempts
        attempts += 1
        querier, worker = workers[w]
        request, last_index[w] = dequeue(querier, worker, last_index[w])
        if request is None:
            return False
        now = now_box[0]
        in_flight[w] = request
        service: int = request.payload
        if querier in busy_count:
            if not busy_count[querier]:
                idle_total[0] += max(0, now - max(idle_since[querier], measure_from))
            busy_count[querier] += 1
        seq += 1
        heapq.heappush(heap, (now + service, seq, w))
        component = request.component
        if now >= measure_from:
            busy_us[component] += service
        if waiting_at_end is None:
            if request.enqueued_at < measure_from_s:
                return True  # a warm-up request: it only loads the queue
        elif now >= window_end:
            waiting_at_end[request.priority] += 1  # still queued when the window ended
            return True
        elif now < measure_from:
            return True  # dispatched before the window measured
        wait = now / US - request.enqueued_at
        waits = by_priority.get(request.priority)
        if waits is None:
            waits = by_priority[request.priority] = []
        waits.append(wait)
        waits = by_component.get(component)
        if waits is None:
            waits = by_component[component] = []
        waits.append(wait)
        waits = by_tenant.get(request.tenant_id)
        if waits is None:
            waits = by_tenant[request.tenant_id] = []
        waits.append(wait)
        served.add(querier)
        if log is not None:
            log.append((request.id, component, wait))
        return True

    times, tenants, components = run.times, run.tenants, run.components
    priorities, services = run.priorities, run.services
    actor_paths = run.actor_paths
    total = len(times)
    rejected = out.rejected_by_tenant
    ai = 0

    def arrive(i: int) -> bool:
        request = Request(
            id=f"r{i}",
            tenant_id=tenants[i],
            component=components[i],
            priority=priorities[i],
            headers=_NO_HEADERS,
            payload=services[i],
            actor_path=actor_paths[i] if actor_paths else (),
        )
        try:
            enqueue(request)
        except TooManyRequests:
            if times[i] >= measure_from:
                rejected[request.tenant_id] += 1
            return False
        if times[i] >= measure_from:
            out.enqueued += 1
        return True

    line = WaitingLine(querier_of, n_queriers)

    def offer_to_every_waiter() -> None:
        """The runtime's dispatch pass: waiters in order, until the queue is empty.

        (Then the rest keep their places untouched.)
        """
        i = 0
        while i < len(line) and len(queue):
            if take(line.order[i]):
                line.leave_at(i)
            else:
                i += 1

    refusals_by: dict[tuple[str, int], Refusals] = {}

    def offer_new(tenant_id: str, priority: int) -> None:
        """The dispatch pass after an arrival, when every waiter refused the queue before it.

        Then the new request is the only one any waiter may take (whatever
        else a waiter may take, it would have taken), so in the runtime's
        pass the first waiter whose querier may take it does, and every
        other dequeue of the pass answers nothing and changes nothing. Those
        are asked here only until their querier refuses this (tenant,
        priority) once (`Refusals`): the same dequeues with the same
        answers, without the ones known to answer nothing.
        """
        key = (tenant_id, priority)
        refusals = refusals_by.get(key)
        if refusals is None:
            refusals = refusals_by[key] = Refusals()
        while True:
            w = line.first_not_refused(refusals)
            if w < 0:
                return
            if take(w):
                line.leave(w)
                return
            refusals.exclude(querier_of[w], n_queriers)

    if run.start_after_arrivals_at_zero:
        while ai < total and times[ai] == 0:
            arrive(ai)
            ai += 1
        for w in order:
            if not take(w):
                line.join(w)
    else:
        for w in order:
            line.join(w)
    # True while a waiter may be able to take a request queued before the
    # last arrival (the limits changed): the next pass is then the runtime's
    # over every waiter, after which each has refused the queue again.
    stale = _OFFER_TO_EVERY_WAITER
    # A federated ID's limits are derived from its tenants' as it is queued
    # (`federation.keep_org_limits`): each ID's last seen, to see them change.
    org_limits: dict[str, TenantLimits] = {}
    change = run.window_config

    def switch() -> None:
        """The window's config onto the queue, and the reservations it makes counted."""
        assert change is not None
        now_box[0] = max(now_box[0], measure_from)
        apply_change(queue, run.limits, change)
        # Reserved-and-idle time is counted from the window's start, so the
        # querier set is simply the new config's, each busy by what it runs.
        out.reserved_queriers = _reserved_queriers(queue)
        busy_count.clear()
        idle_since.clear()
        running = Counter(workers[w][0] for w, held in enumerate(in_flight) if held is not None)
        for querier in out.reserved_queriers:
            busy_count[querier] = running[querier]
            idle_since[querier] = measure_from

    events = 0
    next_check = _CHECK_EVERY
    sample_every = run.sample_every_us
    next_sample = measure_from
    samples = out.queue_length
    all_events = 2 * total
    while True:
        arrival = ai < total and (not heap or times[ai] <= heap[0][0])
        if change is not None:
            # The switch comes before the first event at or after its instant
            # (an arrival then is the new config's), or at the end if none is.
            upcoming = times[ai] if arrival else heap[0][0] if heap else measure_from
            if upcoming >= measure_from:
                switch()
                change = None
                stale = True  # shards and reservations may have changed
                refusals_by.clear()
        if sample_every:
            # The queue length at each grid instant up to the next event: the
            # same instants for every config, so two runs chart side by side
            # (a longer run's on a coarser grid, whose instants the finer has).
            upcoming = times[ai] if arrival else heap[0][0] if heap else -1
            while 0 <= next_sample <= upcoming:
                if len(samples) >= _MAX_SAMPLES - 1:  # one kept for the end
                    # Every other point goes, the stride doubles: the points
                    # kept are the new grid's, from the start.
                    del samples[1::2]
                    sample_every *= 2
                    next_sample = measure_from + len(samples) * sample_every
                    continue
                samples.append(((next_sample - measure_from) / US, len(queue)))
                next_sample += sample_every
        if arrival:
            now_box[0] = times[ai]
            accepted = arrive(ai)
            tenant_id = tenants[ai]
            if "|" in tenant_id:
                limits = queue.tenant_limits(tenant_id)
                seen = org_limits.get(tenant_id)
                if seen is not limits:
                    if seen is not None and seen != limits:
                        stale = True  # this ID's shard or reservations changed
                        refusals_by.clear()
                    org_limits[tenant_id] = limits
            ai += 1
            if accepted and line:
                if stale:
                    offer_to_every_waiter()
                    stale = _OFFER_TO_EVERY_WAITER
                else:
                    offer_new(tenant_id, priorities[ai - 1])
        elif heap:
            at, _, w = heapq.heappop(heap)
            now_box[0] = at
            request = in_flight[w]
            assert request is not None
            in_flight[w] = None
            complete(request.id)
            if request.enqueued_at >= measure_from_s:
                out.completed += 1
            querier = workers[w][0]
            if querier in busy_count:
                busy_count[querier] -= 1
                if not busy_count[querier]:
                    idle_since[querier] = at
            # An empty queue has nothing for anyone: the dequeue the runtime
            # would make changes nothing, so it is skipped.
            if not len(queue) or not take(w):
                line.join(w)
        else:
            break
        events += 1
        if events + attempts + line.looked >= next_check:
            next_check = events + attempts + line.looked + _CHECK_EVERY
            if should_stop is not None and should_stop():
                raise SimulationCancelled("the simulation was cancelled")
            if deadline is not None and time.monotonic() > deadline:
                raise SimulationTimeLimit(events, all_events)
            if progress is not None:
                progress(min(1.0, events / max(1, all_events)))
    end = now_box[0]
    for querier, count in busy_count.items():
        if not count:
            idle_total[0] += max(0, end - max(idle_since[querier], measure_from))
    out.left_queued = len(queue)
    if waiting_at_end is not None and out.left_queued:
        # Never dispatched (no worker could take them): queued at the window's
        # end too. Counted only at dispatch above, a class no querier served
        # would have read as nothing waiting.
        for row in queue.counts().by_priority:
            waiting_at_end[row.priority] += row.length
    out.makespan = max(0, end - measure_from) / US
    out.reserved_idle_seconds = idle_total[0] / US
    out.busy_by_component = {c: us / US for c, us in sorted(busy_us.items())}
    out.served_by = frozenset(served)
    out.dequeue_attempts = attempts
    if sample_every:
        # The end, always: the grid above kept a place for it.
        samples.append((max(0, end - measure_from) / US, len(queue)))
    return out
