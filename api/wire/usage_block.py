"""Querier time per tenant in the shape the inspector and `GET queue/usage/` show.

Read on the scheduler's loop: the runtime host's `TenantUsage` (ended runs)
plus the queue's in-flight requests at this instant (runs still going), and
the worker connections the time is a share of. The shape, and how several
replicas' blocks merge, is `api.cluster.replica_usage`'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from api.cluster.replica_usage import PUBLISHED_ROWS, finish_block
from scheduler_core.queue import RequestQueue
from scheduler_core.tenant_usage import TenantUsage, UsageRow

__all__ = ["UsagePages", "usage_block"]


def usage_block(usage: TenantUsage, queue: RequestQueue, limit: int) -> dict[str, Any]:
    """The `limit` busiest tenants and the totals, as of now (call on the loop)."""
    listing = queue.listing()
    running = [(f.request.tenant_id, f.since) for f in listing.in_flight()]
    report = usage.report(limit, running)
    return finish_block(
        {
            "window_seconds": usage.window_seconds,
            "span_seconds": round(report.span_seconds, 3),
            "querier_seconds": report.querier_seconds,
            "workers": sum(len(q.workers) for q in listing.queriers.values()),
            "tenant_count": report.tenant_count,
            "tenants": [_row(row) for row in report.rows],
        }
    )


class UsagePages:
    """`usage_block` of one queue, the published page built at most once a second.

    Every inspector tick and chart point asks for the `PUBLISHED_ROWS`
    page, and at 10,000 tenants one costs a few milliseconds of the loop;
    any other limit (a REST call's) is built fresh.
    """

    def __init__(
        self,
        usage: TenantUsage,
        queue: RequestQueue,
        clock: Callable[[], float] = time.monotonic,
        refresh_seconds: float = 1.0,
    ) -> None:
        self._usage, self._queue, self._clock = usage, queue, clock
        self._refresh = refresh_seconds
        self._cached: tuple[float, dict[str, Any]] | None = None

    def block(self, limit: int = PUBLISHED_ROWS) -> dict[str, Any]:
        if limit != PUBLISHED_ROWS:
            return usage_block(self._usage, self._queue, limit)
        now = self._clock()
        cached = self._cached
        if cached is None or now - cached[0] >= self._refresh:
            cached = self._cached = (now, usage_block(self._usage, self._queue, limit))
        return cached[1]


def _row(row: UsageRow) -> dict[str, Any]:
    return {
        "tenant": row.tenant_id,
        "querier_seconds": row.querier_seconds,
        "dispatched": row.dispatched,
        "ended": row.ended,
        "running": row.running,
        "wait_mean_seconds": round(row.wait_mean_seconds, 6),
        "wait_max_seconds": round(row.wait_max_seconds, 6),
        "rejected": row.rejected,
    }
