"""Querier time per tenant over the last minute: who holds the queriers now.

Fair queuing shares the queue's turns between tenants by request, in Mimir,
Cortex and here alike, not by how long a request then holds its querier: a
tenant whose queries take 10 s gets a thousand times the querier time of one
whose queries take 10 ms at the same request rate, and the queue lengths do
not show it. This observer measures it, as a runtime observer on the queue's
clock (`Request.dispatched_at` is stamped by that clock).

Time is kept in buckets of `bucket_seconds`, covering the last
`window_seconds` and the bucket now filling. A run is split over the buckets
it spanned when it ends, so a two-minute query ending now adds only its last
minute, not two. A report covers exactly the last `window_seconds`: the
oldest bucket kept straddles its start, and its time is taken as spread
evenly over the bucket and cut there, so a worker busy all along shows the
window, never more (without the cut it showed up to a bucket more, 60-65 s
under a "60 s" heading). Runs still going are added by the reader
(`report(running=...)`), since a tenant holding every worker with queries
that have not ended is the case an operator most needs to see. A run cut
short by its querier's disconnect ends there (`on_interrupted`, told before
the queue clears its start), and its retry is a run of its own: left
uncounted, a tenant whose queries kept losing their queriers showed more
runs dispatched than ended and none of the time they held. A run that
ends failed or cancelled counts too.

Beside the buckets, one running total per tenant is kept (a bucket's
tallies are taken off it when the bucket expires), so a report reads each
tenant once, not once per bucket: at 10,000 tenants that is the difference
between a few milliseconds on the loop and a hundred. Memory is one small
record per tenant active in a bucket, whatever the request rate.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Iterable
from typing import NamedTuple

from scheduler_core.model import Request

__all__ = ["TenantUsage", "UsageReport", "UsageRow"]


class UsageRow(NamedTuple):
    """One tenant's use of the queriers over a report's span.

    `querier_seconds` is worker time held, ended runs and running ones
    alike; divided by the span it is how many workers the tenant held on
    average. `wait_mean_seconds` and `wait_max_seconds` are the queue waits
    of the requests `dispatched` in the span; `running` counts its requests
    on a worker now.
    """

    tenant_id: str
    querier_seconds: float
    dispatched: int
    ended: int
    running: int
    wait_mean_seconds: float
    wait_max_seconds: float
    rejected: int


class UsageReport(NamedTuple):
    """The tenants holding the most querier time, and the sums over all of them.

    `tenant_count` tenants had something in the span; `rows` are the
    first `limit` of them, most querier time first (then most dispatched,
    then by id).
    """

    span_seconds: float
    querier_seconds: float
    tenant_count: int
    rows: tuple[UsageRow, ...]


class _Tally:
    __slots__ = ("dispatched", "ended", "querier_seconds", "rejected", "wait_max", "wait_sum")

    def __init__(self) -> None:
        self.querier_seconds = 0.0
        self.dispatched = 0
        self.ended = 0
        self.wait_sum = 0.0
        self.wait_max = 0.0
        self.rejected = 0


Bucket = dict[str, _Tally]


def _tally(table: dict[str, _Tally], tenant_id: str) -> _Tally:
    found = table.get(tenant_id)
    if found is None:
        found = table[tenant_id] = _Tally()
    return found


class TenantUsage:
    """Per-tenant querier time, dispatches, waits and rejections, bucketed.

    Invariants: `_buckets` holds only indices from `_newest - _keep` on; a
    bucket exists only once something happened in it, so an idle scheduler
    keeps nothing. `_totals[t]` is the sum of t's tallies over `_buckets`
    (but `wait_max`, which cannot be taken off: a report reads it from the
    buckets); a tenant's newest bucket always holds a count (every event
    counts one, and a run's time goes no later than the bucket it ended
    in), so a total whose counts are all zero has no time left either and
    is dropped.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        window_seconds: float = 60.0,
        bucket_seconds: float = 5.0,
    ) -> None:
        if bucket_seconds <= 0 or window_seconds < bucket_seconds:
            raise ValueError("need 0 < bucket_seconds <= window_seconds")
        self._clock = clock
        # Nothing was counted before this: a report spans at most the time since.
        self._counting_since = clock()
        self.window_seconds = float(window_seconds)
        self.bucket_seconds = float(bucket_seconds)
        self._keep = math.ceil(window_seconds / bucket_seconds)
        self._buckets: dict[int, Bucket] = {}
        self._totals: dict[str, _Tally] = {}
        # The newest bucket, kept apart: nearly every event lands in it.
        self._newest = -(2**62)
        self._newest_bucket: Bucket = {}

    # -- observer hooks (SchedulerRuntime calls these) ------------------------

    def on_dispatched(self, request: Request, querier_id: str, worker_id: int, wait: float) -> None:
        tenant_id = request.tenant_id
        here = _tally(self._current(self._clock()), tenant_id)
        here.dispatched += 1
        here.wait_sum += wait
        if wait > here.wait_max:
            here.wait_max = wait
        # The total's wait_max is never read (see the class): not kept up.
        total = _tally(self._totals, tenant_id)
        total.dispatched += 1
        total.wait_sum += wait

    def on_completed(self, request: Request) -> None:
        self._run_ended(request)

    def on_cancelled(self, request: Request) -> None:
        if request.dispatched_at is not None:
            self._run_ended(request)

    def on_failed(self, request: Request, reason: str) -> None:
        if request.dispatched_at is not None:
            self._run_ended(request)

    def on_interrupted(self, request: Request) -> None:
        # A querier that vanished mid-run: that run ended, another may follow.
        self._run_ended(request)

    def on_rejected(self, request: Request, reason: str) -> None:
        tenant_id = request.tenant_id
        _tally(self._current(self._clock()), tenant_id).rejected += 1
        _tally(self._totals, tenant_id).rejected += 1

    # -- reads ---------------------------------------------------------------

    def report(self, limit: int = 20, running: Iterable[tuple[str, float]] = ()) -> UsageReport:
        """The `limit` tenants with the most querier time in the last `window_seconds`.

        `running` are the runs not ended yet, as (tenant, dispatched_at) on
        this object's clock: the queue's in-flight requests at this instant.
        The span is `window_seconds`: querier time is cut at its start (see
        the module); the counts and waits are those of the buckets kept, so
        they may reach up to one bucket further back. In the first
        `window_seconds` after this object started counting, the span is the
        time since: over the whole window, a fleet 15 of 28 workers busy
        12 s after a start read as 3 of 28.
        """
        now = self._clock()
        newest = self._index(now)
        self._expire(newest)
        since = now - self.window_seconds
        cut = self._cut_before(since)
        live: dict[str, list[float]] = {}  # tenant -> [runs, seconds inside the span]
        for tenant_id, started in running:
            held = live.setdefault(tenant_id, [0, 0.0])
            held[0] += 1
            held[1] += max(0.0, now - max(started, since))
        totals = self._totals
        empty = _Tally()

        def seconds(tenant_id: str) -> float:
            extra = live.get(tenant_id)
            own = totals.get(tenant_id, empty).querier_seconds
            own -= sum(part * b[tenant_id].querier_seconds for part, b in cut if tenant_id in b)
            # max: float rounding must not show a tenant a hair below zero.
            return max(0.0, own) + (extra[1] if extra else 0.0)

        tenants = set(totals) | set(live)
        chosen = heapq.nsmallest(
            max(0, limit),
            tenants,
            key=lambda t: (-seconds(t), -totals.get(t, empty).dispatched, t),
        )
        rows = tuple(
            _row(t, totals.get(t, empty), seconds(t), live.get(t), self._wait_max(t))
            for t in chosen
        )
        before = sum(part * t.querier_seconds for part, b in cut for t in b.values())
        return UsageReport(
            span_seconds=min(self.window_seconds, now - self._counting_since),
            querier_seconds=max(0.0, sum(t.querier_seconds for t in totals.values()) - before)
            + sum(held[1] for held in live.values()),
            tenant_count=len(tenants),
            rows=rows,
        )

    # -- internals -----------------------------------------------------------

    def _index(self, at: float) -> int:
        return math.floor(at / self.bucket_seconds)

    def _cut_before(self, since: float) -> list[tuple[float, Bucket]]:
        """The kept buckets that begin before `since`, each with the part of it before.

        One bucket when the window is whole buckets (the oldest kept), at
        most two otherwise.
        """
        width = self.bucket_seconds
        return [
            (min(1.0, (since - index * width) / width), bucket)
            for index, bucket in self._buckets.items()
            if index * width < since
        ]

    def _current(self, now: float) -> Bucket:
        """The bucket `now` falls in (the caller's one clock reading)."""
        index = math.floor(now / self.bucket_seconds)
        if index == self._newest:
            return self._newest_bucket
        return self._bucket(index)

    def _bucket(self, index: int) -> Bucket:
        found = self._buckets.get(index)
        if found is None:
            found = self._buckets[index] = {}
            if index > self._newest:
                self._newest, self._newest_bucket = index, found
                self._expire(index)
        return found

    def _expire(self, newest: int) -> None:
        oldest = newest - self._keep
        # Oldest first: a run's older buckets (time only) were made after the
        # bucket it ended in (its count), and must leave the total before it.
        for index in sorted(i for i in self._buckets if i < oldest):
            for tenant_id, gone in self._buckets.pop(index).items():
                total = self._totals[tenant_id]
                total.querier_seconds -= gone.querier_seconds
                total.dispatched -= gone.dispatched
                total.ended -= gone.ended
                total.wait_sum -= gone.wait_sum
                total.rejected -= gone.rejected
                if not (total.dispatched or total.ended or total.rejected):
                    del self._totals[tenant_id]

    def _wait_max(self, tenant_id: str) -> float:
        found = (b[tenant_id].wait_max for b in self._buckets.values() if tenant_id in b)
        return max(found, default=0.0)

    def _run_ended(self, request: Request) -> None:
        now = self._clock()
        tenant_id = request.tenant_id
        # The bucket first: a new one may expire the oldest and, with it, a total.
        here = _tally(self._current(now), tenant_id)
        total = _tally(self._totals, tenant_id)
        here.ended += 1
        total.ended += 1
        started = request.dispatched_at
        if started is None:  # never taken by a worker through a queue: no run to count
            return
        end, begin = self._index(now), self._index(started)
        if begin == end:  # nearly every run: one bucket
            held = max(0.0, now - started)
            here.querier_seconds += held
            total.querier_seconds += held
            return
        # A run over several buckets: each kept one gets its own part.
        width = self.bucket_seconds
        for index in range(max(begin, end - self._keep), end + 1):
            part = min(now, (index + 1) * width) - max(started, index * width)
            if part > 0:
                _tally(self._bucket(index), tenant_id).querier_seconds += part
                total.querier_seconds += part


def _row(
    tenant_id: str, tally: _Tally, seconds: float, live: list[float] | None, wait_max: float
) -> UsageRow:
    mean = tally.wait_sum / tally.dispatched if tally.dispatched else 0.0
    return UsageRow(
        tenant_id=tenant_id,
        querier_seconds=max(0.0, seconds),
        dispatched=tally.dispatched,
        ended=tally.ended,
        running=int(live[0]) if live else 0,
        wait_mean_seconds=max(0.0, mean),
        wait_max_seconds=wait_max,
        rejected=tally.rejected,
    )
