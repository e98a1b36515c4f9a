"""Querier time per tenant over the last minute: who holds the queriers now.

Fair queuing shares the queue's turns between tenants by request, in Mimir,
Cortex and here alike, not by how long a request then holds its querier: a
tenant whose queries take 10 s gets a thousand times the querier time of one
whose queries take 10 ms at the same request rate, and the queue lengths do
not show it. This observer measures it, as a runtime observer on the queue's
clock (`Request.dispatched_at` is stamped by that clock).

Time is kept in buckets of `bucket_seconds`, for at most `window_seconds`.
A run is split over the buckets it spanned when it ends, so a two-minute
query ending now adds only its last minute to a one-minute window, not two
minutes; runs still going are added by the reader (`report(running=...)`),
since a tenant holding every worker with queries that have not ended yet is
the case an operator most needs to see. A run cut short by its querier's
disconnect and retried is not counted (the queue clears its start); a run
that ends failed or cancelled is.

Memory is one small record per tenant active in a bucket, for at most
`window_seconds / bucket_seconds + 1` buckets, whatever the request rate.
Reads are by whole buckets, so a report's span is a little shorter than the
window asked for; it says how long it is.
"""

from __future__ import annotations

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
    of the requests `dispatched` in the span.
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
    """Every tenant with anything in the span, most querier time first."""

    span_seconds: float
    querier_seconds: float
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


class TenantUsage:
    """Per-tenant querier time, dispatches, waits and rejections, bucketed.

    Invariant: `_buckets` holds only indices from `_newest - _keep` on (the
    oldest is the one a full window may start in); a bucket exists only
    once something happened in it, so an idle scheduler keeps nothing.
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
        self.window_seconds = float(window_seconds)
        self.bucket_seconds = float(bucket_seconds)
        self._keep = math.ceil(window_seconds / bucket_seconds)
        self._buckets: dict[int, Bucket] = {}
        # The newest bucket, kept apart: nearly every event lands in it.
        self._newest = -(2**62)
        self._newest_bucket: Bucket = {}

    # -- observer hooks (SchedulerRuntime calls these) ------------------------

    def on_dispatched(self, request: Request, querier_id: str, worker_id: int, wait: float) -> None:
        tally = self._tally(self._current(self._clock()), request.tenant_id)
        tally.dispatched += 1
        tally.wait_sum += wait
        if wait > tally.wait_max:
            tally.wait_max = wait

    def on_completed(self, request: Request) -> None:
        self._run_ended(request)

    def on_cancelled(self, request: Request) -> None:
        if request.dispatched_at:
            self._run_ended(request)

    def on_failed(self, request: Request, reason: str) -> None:
        if request.dispatched_at:
            self._run_ended(request)

    def on_rejected(self, request: Request, reason: str) -> None:
        self._tally(self._current(self._clock()), request.tenant_id).rejected += 1

    # -- reads ---------------------------------------------------------------

    def report(
        self, window: float | None = None, running: Iterable[tuple[str, float]] = ()
    ) -> UsageReport:
        """The last `window` seconds (at most `window_seconds`), by whole buckets.

        `running` are the runs not ended yet, as (tenant, dispatched_at) on
        this object's clock: the queue's in-flight requests at this instant.
        The span starts at the oldest bucket wholly inside the window, so it
        is between `window - bucket_seconds` and `window` long.
        """
        now = self._clock()
        width = self.bucket_seconds
        wanted = self.window_seconds if window is None else min(window, self.window_seconds)
        newest = self._index(now)
        self._expire(newest)
        first = min(newest, math.ceil((now - wanted) / width))
        since = first * width
        merged: dict[str, _Tally] = {}
        for index, bucket in self._buckets.items():
            if index >= first:
                for tenant_id, tally in bucket.items():
                    _merge(self._tally(merged, tenant_id), tally)
        live: dict[str, int] = {}
        for tenant_id, started in running:
            held = now - max(started, since)
            self._tally(merged, tenant_id).querier_seconds += max(0.0, held)
            live[tenant_id] = live.get(tenant_id, 0) + 1
        rows = sorted(
            (_row(tenant_id, tally, live.get(tenant_id, 0)) for tenant_id, tally in merged.items()),
            key=lambda row: (-row.querier_seconds, -row.dispatched, row.tenant_id),
        )
        return UsageReport(
            span_seconds=max(0.0, now - since),
            querier_seconds=sum(row.querier_seconds for row in rows),
            rows=tuple(rows),
        )

    # -- internals -----------------------------------------------------------

    def _index(self, at: float) -> int:
        return math.floor(at / self.bucket_seconds)

    def _current(self, now: float) -> Bucket:
        index = self._index(now)
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
        for index in [i for i in self._buckets if i < oldest]:
            del self._buckets[index]

    @staticmethod
    def _tally(bucket: dict[str, _Tally], tenant_id: str) -> _Tally:
        found = bucket.get(tenant_id)
        if found is None:
            found = bucket[tenant_id] = _Tally()
        return found

    def _run_ended(self, request: Request) -> None:
        now = self._clock()
        tenant_id = request.tenant_id
        end = self._index(now)
        self._tally(self._current(now), tenant_id).ended += 1
        started = request.dispatched_at
        if not started:  # never taken by a worker through a queue: no run to count
            return
        begin = self._index(started)
        if begin == end:  # nearly every run: one bucket
            self._tally(self._current(now), tenant_id).querier_seconds += max(0.0, now - started)
            return
        # A run over several buckets: each gets its own part, none older than kept.
        width = self.bucket_seconds
        for index in range(max(begin, end - self._keep), end + 1):
            part = min(now, (index + 1) * width) - max(started, index * width)
            if part > 0:
                self._tally(self._bucket(index), tenant_id).querier_seconds += part


def _merge(into: _Tally, tally: _Tally) -> None:
    into.querier_seconds += tally.querier_seconds
    into.dispatched += tally.dispatched
    into.ended += tally.ended
    into.wait_sum += tally.wait_sum
    into.wait_max = max(into.wait_max, tally.wait_max)
    into.rejected += tally.rejected


def _row(tenant_id: str, tally: _Tally, running: int) -> UsageRow:
    mean = tally.wait_sum / tally.dispatched if tally.dispatched else 0.0
    return UsageRow(
        tenant_id=tenant_id,
        querier_seconds=tally.querier_seconds,
        dispatched=tally.dispatched,
        ended=tally.ended,
        running=running,
        wait_mean_seconds=mean,
        wait_max_seconds=tally.wait_max,
        rejected=tally.rejected,
    )
