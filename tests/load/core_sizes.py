"""Size figures of the core benchmark: snapshot time and bytes per request.

Split from `tests.load.core_bench` (which reports them) so each module keeps
to one kind of measurement: that one times operations, this one sizes state.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from scheduler_core.model import COMPONENTS, QueueConfig, Request, TenantLimits
from scheduler_core.queue import RequestQueue

__all__ = [
    "WORKERS_PER_QUERIER",
    "MemoryResult",
    "measure_memory",
    "measure_snapshot",
    "untimed_gc",
]

_T = TypeVar("_T")
# The service opens at least 4 workers per querier, as Mimir forces for QWQP.
WORKERS_PER_QUERIER = 4


def untimed_gc(fn: Callable[[], _T]) -> _T:
    """Run `fn` with the collector off, after a full collection."""
    gc.collect()
    gc.disable()
    try:
        return fn()
    finally:
        gc.enable()


def _loaded_queue(tenants: int, per_tenant: int, queriers: int) -> RequestQueue:
    """Tenants with work in two components, and busy and idle workers.

    Past two requests per tenant, each further pair has the next priority.
    """
    queue = RequestQueue(
        QueueConfig(max_outstanding_requests_per_tenant=1 << 30), clock=time.monotonic
    )
    for q in range(queriers):
        for _ in range(WORKERS_PER_QUERIER):
            queue.connect_querier(f"querier-{q}")
    for t in range(0, tenants, 10):
        queue.set_tenant_limits(f"tenant-{t}", TenantLimits(max_queriers=2))
    for i in range(tenants * per_tenant):
        component = COMPONENTS[i // tenants % 2]
        priority = i // (2 * tenants)
        tenant = f"tenant-{i % tenants}"
        queue.enqueue(Request(id=f"s{i}", tenant_id=tenant, component=component, priority=priority))
    last = -1
    for q in range(queriers):
        _, last = queue.dequeue(f"querier-{q}", 0, last)
    return queue


def measure_snapshot(tenants: int, repeats: int, queriers: int = 8, priorities: int = 1) -> float:
    """Minimum seconds of one `snapshot()` with `tenants` tenants queued.

    With `priorities` > 1 every leaf holds that many priorities (the
    multi-priority form a tenant with priority rules is in).
    """
    queue = _loaded_queue(tenants, 2 * priorities, queriers)
    best = float("inf")
    for _ in range(repeats):
        best = min(best, untimed_gc(partial(_time_snapshot, queue)))
    return best


def _time_snapshot(queue: RequestQueue) -> float:
    start = time.perf_counter()
    queue.snapshot()
    return time.perf_counter() - start


@dataclass(frozen=True, slots=True)
class MemoryResult:
    """Bytes per queued request: the queue's own and the Request object's."""

    tenants: int
    per_tenant: int
    queue_bytes: float
    request_bytes: float


def measure_memory(tenants: int, per_tenant: int) -> MemoryResult:
    """tracemalloc of building the requests, then of queuing them."""
    n = tenants * per_tenant
    names = [f"tenant-{i}" for i in range(tenants)]
    ids = [f"m{i}" for i in range(n)]
    queue = RequestQueue(QueueConfig(max_outstanding_requests_per_tenant=1 << 30))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        requests = [Request(id=ids[i], tenant_id=names[i % tenants]) for i in range(n)]
        built = tracemalloc.get_traced_memory()[0]
        for request in requests:
            queue.enqueue(request)
        queued = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(queue) == n
    return MemoryResult(tenants, per_tenant, (queued - built) / n, (built - before) / n)
