"""`/metrics`: Prometheus exposition with Mimir/Cortex's query-scheduler names.

Counters and the queue-duration histogram are fed by a runtime observer as
events happen; gauges (queue length, connected clients, in-flight requests)
are computed from `runtime.snapshot()` at scrape time by a custom collector,
so they can never drift from the queue. The view is async so the snapshot is
taken on the runtime's own loop, never from a worker thread.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

from api.wire import runtime_host
from scheduler_core.model import Request
from scheduler_core.snapshot import QueueSnapshot

__all__ = ["REGISTRY", "MetricsObserver", "SnapshotCollector", "metrics_view"]

REGISTRY = CollectorRegistry(auto_describe=True)

DISCARDED = Counter(
    "cortex_query_scheduler_discarded_requests_total",
    "Requests refused because the tenant had too many outstanding requests.",
    ["user", "priority"],
    registry=REGISTRY,
)
CANCELLED = Counter(
    "cortex_query_scheduler_cancelled_requests_total",
    "Requests cancelled by their frontend before they completed.",
    ["user"],
    registry=REGISTRY,
)
ENQUEUED = Counter(
    "cortex_request_queue_requests_total",
    "Requests accepted into the queue.",
    ["user", "priority"],
    registry=REGISTRY,
)
# Per-user labels would multiply the buckets by the tenant count; component
# and priority are what an operator slices queue wait by.
QUEUE_DURATION = Histogram(
    "cortex_query_scheduler_queue_duration_seconds",
    "Time requests spent queued before a querier worker took them.",
    ["additional_queue_dimensions", "priority"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
    registry=REGISTRY,
)


class MetricsObserver:
    """Runtime observer that counts events into the registry."""

    def on_enqueued(self, request: Request) -> None:
        ENQUEUED.labels(request.tenant_id, str(request.priority)).inc()

    def on_rejected(self, request: Request, reason: str) -> None:
        DISCARDED.labels(request.tenant_id, str(request.priority)).inc()

    def on_cancelled(self, request: Request) -> None:
        CANCELLED.labels(request.tenant_id).inc()

    def on_dispatched(self, request: Request, querier_id: str, worker_id: int, wait: float) -> None:
        QUEUE_DURATION.labels(request.component, str(request.priority)).observe(wait)


def _gauge(name: str, doc: str, labels: list[str] | None = None) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=labels)


def snapshot_families(snap: QueueSnapshot | None, frontends: int) -> list[GaugeMetricFamily]:
    """The scrape-time gauges of one snapshot (all zero before the runtime starts)."""
    length = _gauge(
        "cortex_query_scheduler_queue_length",
        "Requests queued, by tenant, priority and queue type (fifo or priority).",
        ["user", "priority", "type"],
    )
    queriers = _gauge(
        "cortex_query_scheduler_connected_querier_clients",
        "Querier worker connections currently connected.",
    )
    frontend_gauge = _gauge(
        "cortex_query_scheduler_connected_frontend_clients",
        "Frontend connections currently connected (websocket and gRPC).",
    )
    inflight = _gauge(
        "cortex_query_scheduler_querier_inflight_requests",
        "Requests being run by querier workers, by query component.",
        ["query_component"],
    )
    frontend_gauge.add_metric([], frontends)
    if snap is None:
        queriers.add_metric([], 0)
        return [length, queriers, frontend_gauge, inflight]
    priority_type = {t.tenant_id: t.priority_enabled for t in snap.tenants}
    per_priority: Tally[tuple[str, int]] = Tally()
    for leaf in snap.leaves:
        for priority, count in leaf.by_priority:
            per_priority[(leaf.tenant_id, priority)] += count
    for (tenant, priority), count in sorted(per_priority.items()):
        kind = "priority" if priority_type.get(tenant) else "fifo"
        length.add_metric([tenant, str(priority), kind], count)
    workers = [w for q in snap.queriers if q.connected for w in q.workers]
    queriers.add_metric([], len(workers))
    busy: Tally[str] = Tally(w.component for w in workers if w.request_id and w.component)
    for component, count in sorted(busy.items()):
        inflight.add_metric([component], count)
    return [length, queriers, frontend_gauge, inflight]


class SnapshotCollector(Collector):
    """Gauges read from the running scheduler at scrape time."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        snap, frontends = None, 0
        if runtime_host.started():
            host = runtime_host.get_host()
            snap = host.runtime.snapshot()
            frontends = host.frontend_clients
        yield from snapshot_families(snap, frontends)

    def describe(self) -> list[Any]:
        return []  # unchecked collector: its families depend on the queue


REGISTRY.register(SnapshotCollector())
runtime_host.add_observer(MetricsObserver())


async def metrics_view(request: HttpRequest) -> HttpResponse:
    """Open unless `METRICS_REQUIRE_LOGIN`, as Prometheus scrapers expect."""
    if getattr(settings, "METRICS_REQUIRE_LOGIN", False):
        user = await request.auser()
        if not user.is_authenticated:
            return HttpResponse("login required\n", status=401, content_type="text/plain")
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)
