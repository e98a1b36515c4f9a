"""One simulated config's result in the REST contract's shape (`POST /api/v1/simulate/`).

`summarize` turns an engine run (`scheduler_core.whatif_engine.EngineResult`)
and the arrivals the doors refused into one side of the what-if answer:
waits by priority, component and worst tenant, refusals, utilisation,
reserved-idle time, request counts, what was still queued at the window's
end and the queue-length series. `scheduler_core.whatif` re-exports it.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from scheduler_core.model import COMPONENTS
from scheduler_core.whatif_engine import EngineResult

__all__ = ["BY_RULE", "TOO_MANY_TENANTS", "WORST_TENANTS", "summarize"]

WORST_TENANTS = 5
# Why the doors refuse an arrival before the queue, as `whatif._classified` says.
BY_RULE = "by_rule"
TOO_MANY_TENANTS = "too_many_tenants"


def _stats(waits: list[float]) -> dict[str, float | int]:
    """{mean, p50, p99, max, count} in seconds; nearest-rank percentiles."""
    if not waits:
        return {"mean": 0.0, "p50": 0.0, "p99": 0.0, "max": 0.0, "count": 0}
    ordered = sorted(waits)
    n = len(ordered)

    def rank(q: float) -> float:
        return round(ordered[max(1, math.ceil(q * n)) - 1], 6)

    return {
        "mean": round(sum(ordered) / n, 6),
        "p50": rank(0.5),
        "p99": rank(0.99),
        "max": round(ordered[-1], 6),
        "count": n,
    }


def _waiting_at_end(run: EngineResult) -> dict[str, Any] | None:
    """A window's requests still queued at its end, by priority; None for a scenario."""
    waiting = run.waiting_at_end
    if waiting is None:
        return None
    return {
        "total": sum(waiting.values()),
        "by_priority": {str(p): waiting[p] for p in sorted(waiting, reverse=True)},
    }


def summarize(
    run: EngineResult, duration: float | None, refused: Counter[tuple[str, str]] | None = None
) -> dict[str, Any]:
    """One config's result in the REST contract's shape (plus a few extras).

    `refused`: arrivals the doors refused (never queued), by (`BY_RULE` or
    `TOO_MANY_TENANTS`, tenant).
    """
    refused = refused or Counter()
    by_tenant = Counter(run.rejected_by_tenant)
    for (_, tenant), count in refused.items():
        by_tenant[tenant] += count
    span = max(run.makespan, duration or 0.0)
    ranked = sorted(
        ((_stats(w), t) for t, w in run.waits_by_tenant.items()),
        key=lambda pair: (-pair[0]["p99"], -pair[0]["mean"], pair[1]),
    )
    tenants = [{"tenant": t, **row} for row, t in ranked[:WORST_TENANTS]]
    capacity = run.workers * span
    too_many = sum(run.rejected_by_tenant.values())
    by_rule = sum(n for (why, _), n in refused.items() if why == BY_RULE)
    too_many_tenants = sum(n for (why, _), n in refused.items() if why == TOO_MANY_TENANTS)
    rejected = too_many + by_rule + too_many_tenants
    return {
        "by_priority": {
            str(p): _stats(run.waits_by_priority[p])
            for p in sorted(run.waits_by_priority, reverse=True)
        },
        "by_component": {
            c: _stats(run.waits_by_component[c]) for c in COMPONENTS if c in run.waits_by_component
        },
        "worst_tenants": tenants,
        "rejected": {
            "total": rejected,
            "too_many_outstanding": too_many,
            "by_rule": by_rule,
            "too_many_tenants": too_many_tenants,
            "by_tenant": dict(sorted(by_tenant.items())),
        },
        "utilisation": {
            c: round(busy / capacity, 4) if capacity else 0.0
            for c, busy in run.busy_by_component.items()
        },
        "reserved_idle_seconds": round(run.reserved_idle_seconds, 6),
        "reserved_queriers": list(run.reserved_queriers),
        "requests": {
            "offered": run.enqueued + rejected,
            "enqueued": run.enqueued,
            "completed": run.completed,
            "left_queued": run.left_queued,
        },
        "waiting_at_window_end": _waiting_at_end(run),
        "makespan_seconds": round(run.makespan, 6),
        "series": {
            "t": [round(t, 3) for t, _ in run.queue_length],
            "queue_length": [n for _, n in run.queue_length],
        },
    }
