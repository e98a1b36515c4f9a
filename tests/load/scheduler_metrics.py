"""What a scheduler's own /metrics says, read the same way for Cortex's and for ours.

Both export `process_cpu_seconds_total` (Go's and Python's Prometheus
clients alike) and `cortex_query_scheduler_queue_duration_seconds`, whose
count is one per request handed to a querier: CPU per dispatched query is
then the figure an operator would graph, which `cortex_bench` prints beside
the one it measures from /proc.
"""

from __future__ import annotations

import re

from tests.load.bench_processes import http_get

__all__ = ["dispatch_count", "reported_cost", "reported_us"]


def dispatch_count(metrics_url: str) -> int:
    """Requests the scheduler handed to queriers so far (its queue-duration count)."""
    _, text = http_get(metrics_url)
    name = "cortex_query_scheduler_queue_duration_seconds_count"
    return int(sum(float(m) for m in re.findall(rf"^{name}(?:\{{[^}}]*\}})? (\S+)$", text, re.M)))


def reported_cost(metrics_url: str) -> tuple[float, int]:
    """The scheduler's process CPU seconds and its dispatches so far."""
    _, text = http_get(metrics_url)
    found = re.search(r"^process_cpu_seconds_total (\S+)$", text, re.M)
    return (float(found.group(1)) if found else float("nan")), dispatch_count(metrics_url)


def reported_us(before: list[tuple[float, int]], after: list[tuple[float, int]]) -> float:
    """CPU microseconds per dispatch between two readings of every replica."""
    cpu = sum(a[0] - b[0] for a, b in zip(after, before, strict=True))
    dispatched = sum(a[1] - b[1] for a, b in zip(after, before, strict=True))
    return cpu / dispatched * 1e6 if dispatched else float("nan")
