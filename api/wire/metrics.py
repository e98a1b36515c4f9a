"""`/metrics`: Prometheus exposition with Mimir/Cortex's query-scheduler names.

Counters and the queue-duration histogram are fed by a runtime observer as
events happen; gauges (queue length, connected clients, in-flight requests)
are computed from `runtime.snapshot()` at scrape time by a custom collector,
so they can never drift from the queue. The view is async so the snapshot is
taken on the runtime's own loop, never from a worker thread.

Series labelled by tenant are removed once the tenant has had nothing
queued or in flight for `METRICS_TENANT_IDLE_SECONDS` (default 900, as
Cortex's inactive-user cleanup), so unknown tenant IDs cannot pile up
series (`api.wire.tenant_series`).

Mimir's newest queue signals are cheap here too: the oldest wait comes from
the leaf heads the snapshot already reads, and the per-tenant peak queue
length since the last scrape is a running maximum the observer raises on
each enqueue (one dict look-up) and the scrape reseeds, never a scan.
"""

from __future__ import annotations

import time
from collections import Counter as Tally
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)

from api.cluster import replica_board
from api.wire import runtime_host
from api.wire.config_metrics import ConfigVersionCollector, ReconcileRecord
from api.wire.exposition import RowFamily
from api.wire.failure_metrics import FailureCounter
from api.wire.grpc.tls_handshakes import FAILURES as TLS_HANDSHAKE_FAILURES
from api.wire.loop_load import LoopLoad, LoopLoadCollector
from api.wire.loop_metrics import (
    Build,
    LoopBoundCollector,
    TallyCounter,
    TallyHistogram,
    register_loop_bound,
    render,
)
from api.wire.metrics_access import scrape_refusal
from api.wire.rule_metrics import RuleStatsCollector
from api.wire.tenant_series import DEFAULT_IDLE_SECONDS, TenantSeriesJanitor
from scheduler_core.model import Request
from scheduler_core.queue_counts import QueueCounts
from scheduler_core.runtime import SchedulerRuntime

__all__ = [
    "JANITOR",
    "REGISTRY",
    "MetricsObserver",
    "QueuePeaks",
    "SnapshotCollector",
    "metrics_view",
]

# Cortex's scheduler (Go's client) exports no `_created` samples; the Python
# client adds one beside every counter, histogram and summary child, each a
# series Prometheus stores: at 10,000 tenants 10,000 more, and a quarter of
# the scrape's lines. Process-wide, read at each collect.
disable_created_metrics()

REGISTRY = CollectorRegistry(auto_describe=True)

# The counters with a series per tenant are dicts counted on the loop, not
# library counters (api.wire.loop_metrics.TallyCounter): the enqueue count
# is kept on every request, and a scrape writes them as rows.
DISCARDED = TallyCounter(
    "cortex_query_scheduler_discarded_requests_total",
    "Requests refused because the tenant had too many outstanding requests.",
    ("user", "priority"),
    registry=REGISTRY,
)
CANCELLED = TallyCounter(
    "cortex_query_scheduler_cancelled_requests_total",
    "Requests cancelled by their frontend before they completed.",
    ("user",),
    registry=REGISTRY,
)
ENQUEUED = TallyCounter(
    "cortex_request_queue_requests_total",
    "Requests accepted into the queue.",
    ("user", "priority"),
    registry=REGISTRY,
)
# Its `reason` is one of a fixed few (api.wire.failure_metrics), not the text.
FAILED = FailureCounter(registry=REGISTRY)
# What the inspector's "Querier time" panel shows, for dashboards: its rate
# per tenant is how many workers the tenant held on average.
QUERIER_SECONDS = TallyCounter(
    "queue_inspector_querier_seconds_total",
    "Worker time requests held on queriers, by tenant, counted as each run ends "
    "(completed, failed or cancelled).",
    ("user",),
    registry=REGISTRY,
)
# Per-user labels would multiply the buckets by the tenant count; component
# and priority are what an operator slices queue wait by. Observed on every
# dispatch, so kept on the loop as the counters above are.
QUEUE_DURATION = TallyHistogram(
    "cortex_query_scheduler_queue_duration_seconds",
    "Time requests spent queued before a querier worker took them.",
    ("additional_queue_dimensions", "priority"),
    (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
    registry=REGISTRY,
)


class QueuePeaks:
    """Each tenant's peak queue length since the last scrape (Mimir's semantics).

    `note` raises a running maximum; `collect` reports max(peak, standing
    depth) for every tenant seen and starts the next window at the standing
    depth, so a burst that drained between two scrapes is still reported,
    and a drained tenant is reported 0 once, then dropped.
    """

    def __init__(self) -> None:
        self._peak: dict[str, int] = {}

    def note(self, tenant_id: str, length: int) -> None:
        if length > self._peak.get(tenant_id, 0):
            self._peak[tenant_id] = length

    def collect(self, standing: Mapping[str, int]) -> list[tuple[str, int]]:
        out = {t: max(p, standing.get(t, 0)) for t, p in self._peak.items()}
        for tenant, length in standing.items():
            if length > 0 and tenant not in out:
                out[tenant] = length
        self._peak = {t: standing.get(t, 0) for t, value in out.items() if value > 0}
        return sorted(out.items())


PEAKS = QueuePeaks()


def _runtime_clock() -> float:
    """The running scheduler's clock (so its tests' fake clock drives the janitor)."""
    if runtime_host.started():
        return runtime_host.get_runtime().clock()
    return time.monotonic()


def _idle_seconds() -> float:
    return float(getattr(settings, "METRICS_TENANT_IDLE_SECONDS", DEFAULT_IDLE_SECONDS))


# Per-tenant series go once a tenant has had nothing queued or in flight for
# METRICS_TENANT_IDLE_SECONDS (api.wire.tenant_series).
JANITOR = TenantSeriesJanitor(_runtime_clock, _idle_seconds)
# The priorities each tenant's labelled counters were used with, to remove
# exactly those series.
_PRIORITIES: dict[str, set[str]] = {}


def _forget_tenant(tenant_id: str) -> None:
    for priority in _PRIORITIES.pop(tenant_id, ()):
        ENQUEUED.remove(tenant_id, priority)
        DISCARDED.remove(tenant_id, priority)
    CANCELLED.remove(tenant_id)
    FAILED.forget(tenant_id)
    QUERIER_SECONDS.remove(tenant_id)
    if runtime_host.started():
        # Rule counters of a tenant nobody configured are as unbounded as ours.
        host = runtime_host.get_host()
        forget = getattr(host.admission_log.stats, "forget", None)
        if forget is not None and not host.tenant_configured(tenant_id):
            forget(tenant_id)


JANITOR.on_forget(_forget_tenant)
_counted_runtime: list[Any] = [None]


def _same_runtime(runtime: SchedulerRuntime | None) -> None:
    """The janitor's counts belong to one runtime; a new one starts them again."""
    if runtime is not None and runtime is not _counted_runtime[0]:
        if _counted_runtime[0] is not None:
            JANITOR.restart()
        _counted_runtime[0] = runtime


def _note_priority(tenant: str, priority: str) -> None:
    seen = _PRIORITIES.get(tenant)
    if seen is None:
        seen = _PRIORITIES[tenant] = set()
    seen.add(priority)


def _run_ended(request: Request) -> None:
    # `dispatched_at` is on the runtime's clock, the host's time.monotonic;
    # None for a request that ended while queued (no querier time).
    started = request.dispatched_at
    if started is not None:
        QUERIER_SECONDS.add(time.monotonic() - started, request.tenant_id)


class MetricsObserver:
    """Runtime observer that counts events into the registry."""

    def on_enqueued(self, request: Request) -> None:
        tenant, priority = request.tenant_id, str(request.priority)
        ENQUEUED.inc(tenant, priority)
        _note_priority(tenant, priority)
        # Once per request: the runtime looked up once, no set built to be dropped.
        runtime = runtime_host.get_runtime() if runtime_host.started() else None
        _same_runtime(runtime)
        JANITOR.started(tenant)
        if runtime is not None:
            PEAKS.note(tenant, runtime.queue.tenant_length(tenant))

    def on_rejected(self, request: Request, reason: str) -> None:
        # Only the outstanding limit reports here (the runtime's enqueue).
        tenant, priority = request.tenant_id, str(request.priority)
        DISCARDED.inc(tenant, priority)
        _note_priority(tenant, priority)
        JANITOR.seen(tenant)

    def on_refused(self, tenant_id: str) -> None:
        # Its rule counters' series go once it has been idle for the delay,
        # like any refused tenant's (a federated `a|b` inherits a's rules).
        JANITOR.seen(tenant_id)

    def on_cancelled(self, request: Request) -> None:
        CANCELLED.inc(request.tenant_id)
        _run_ended(request)
        JANITOR.ended(request.tenant_id)

    def on_completed(self, request: Request) -> None:
        _run_ended(request)
        JANITOR.ended(request.tenant_id)

    def on_failed(self, request: Request, reason: str) -> None:
        FAILED.count(request.tenant_id, reason)
        _run_ended(request)
        JANITOR.ended(request.tenant_id)

    def on_dispatched(self, request: Request, querier_id: str, worker_id: int, wait: float) -> None:
        QUEUE_DURATION.observe(wait, request.component, str(request.priority))


def _gauge(name: str, doc: str, labels: tuple[str, ...] = ()) -> RowFamily:
    # Rows, not samples: the per-tenant gauges have a series per tenant.
    return RowFamily(name, doc, "gauge", labels)


def signal_families(
    counts: QueueCounts | None,
    peaks: list[tuple[str, int]],
    replicas: list[tuple[str, bool]],
) -> list[RowFamily]:
    """Mimir's newest queue signals plus the gauges our alert rules need.

    `cortex_query_scheduler_queue_max_wait_seconds` has no labels, as in
    Mimir (one series per scheduler); the peak has Mimir's `user` label. The
    `queue_inspector_*` gauges are ours: how long each reserved querier has
    sat idle, and which replicas this one sees up (deploy/prometheus/alerts.yaml).
    """
    max_wait = _gauge(
        "cortex_query_scheduler_queue_max_wait_seconds",
        "How long the oldest request still waiting in the queue has waited (0 when empty).",
    )
    peak = _gauge(
        "cortex_query_scheduler_max_queue_length",
        "Maximum number of queries observed in a tenant's queue since the last "
        "metric collection (reset on each scrape).",
        ("user",),
    )
    reserved_idle = _gauge(
        "queue_inspector_reserved_querier_idle_seconds",
        "How long a querier holding a reservation has had no busy worker.",
        ("querier",),
    )
    replica_up = _gauge(
        "queue_inspector_replica_up",
        "1 for this replica and each peer publishing its summary; 0 for a peer that "
        "stopped publishing without a graceful withdrawal (remembered 15 minutes).",
        ("replica",),
    )
    oldest = None
    if counts is not None:
        oldest = counts.oldest_enqueued_at
        for querier in counts.queriers:
            if querier.reserved_idle and querier.connected and querier.workers:
                idle_since = max(w.since for w in querier.workers)
                reserved_idle.add_metric(
                    [querier.querier_id], max(0.0, counts.taken_at - idle_since)
                )
    max_wait.add_metric([], 0.0 if oldest is None or counts is None else counts.taken_at - oldest)
    for tenant, value in peaks:
        peak.add_metric([tenant], value)
    for replica, up in replicas:
        replica_up.add_metric([replica], 1.0 if up else 0.0)
    return [max_wait, peak, reserved_idle, replica_up]


def snapshot_families(counts: QueueCounts | None, frontends: int) -> list[RowFamily]:
    """The scrape-time gauges of the queue's counts (all zero before the runtime starts)."""
    length = _gauge(
        "cortex_query_scheduler_queue_length",
        "Requests queued, by tenant, priority and queue type (fifo or priority).",
        ("user", "priority", "type"),
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
        ("query_component",),
    )
    frontend_gauge.add_metric([], frontends)
    if counts is None:
        queriers.add_metric([], 0)
        return [length, queriers, frontend_gauge, inflight]
    per_priority: Tally[tuple[str, int, bool]] = Tally()
    for row in counts.by_priority:
        per_priority[(row.tenant_id, row.priority, row.priority_enabled)] += row.length
    for (tenant, priority, enabled), count in sorted(per_priority.items()):
        length.add_metric([tenant, str(priority), "priority" if enabled else "fifo"], count)
    workers = [w for q in counts.queriers if q.connected for w in q.workers]
    queriers.add_metric([], len(workers))
    busy: Tally[str] = Tally(w.component for w in workers if w.request_id and w.component)
    for component, count in sorted(busy.items()):
        inflight.add_metric([component], count)
    return [length, queriers, frontend_gauge, inflight]


class SnapshotCollector(LoopBoundCollector):
    """Gauges read from the running scheduler at scrape time.

    The queue's counts (not a whole snapshot: see `scheduler_core.queue_counts`),
    the peaks' reseed and the replicas are read on the loop; the families
    are built from them (immutable) wherever the scrape is formatted.
    """

    def take(self) -> Build:
        counts, frontends = None, 0
        if runtime_host.started():
            host = runtime_host.get_host()
            counts = host.runtime.queue.counts()
            frontends = host.frontend_clients
        peaks = PEAKS.collect(counts.queued if counts is not None else {})
        replicas = replica_board.get_board().replica_states()
        return lambda: [
            *snapshot_families(counts, frontends),
            *signal_families(counts, peaks, replicas),
        ]


register_loop_bound(REGISTRY, SnapshotCollector())
register_loop_bound(REGISTRY, RuleStatsCollector())


def _loop_load() -> LoopLoad | None:
    return runtime_host.get_host().loop_load if runtime_host.started() else None


def _reconciles() -> ReconcileRecord | None:
    return runtime_host.get_host().reconciles if runtime_host.started() else None


register_loop_bound(REGISTRY, LoopLoadCollector(_loop_load))
register_loop_bound(REGISTRY, ConfigVersionCollector(runtime_host.config_version, _reconciles))
# The lean gRPC door's refused TLS handshakes, by a fixed reason, 0 before any.
REGISTRY.register(TLS_HANDSHAKE_FAILURES)
# What every Prometheus client exports, as Cortex's scheduler does (process_*;
# python_* in place of go_*): process_cpu_seconds_total over dispatched
# requests is the scheduler's CPU per query.
ProcessCollector(registry=REGISTRY)
PlatformCollector(registry=REGISTRY)
GCCollector(registry=REGISTRY)
runtime_host.add_observer(MetricsObserver())


async def metrics_view(request: HttpRequest) -> HttpResponse:
    """Open unless `METRICS_REQUIRE_LOGIN`, as Prometheus scrapers expect."""
    if getattr(settings, "METRICS_REQUIRE_LOGIN", False):
        refusal = await scrape_refusal(request)
        if refusal is not None:
            return refusal
    # Before the counters are read: idle tenants' series are gone from this scrape.
    _same_runtime(runtime_host.get_runtime() if runtime_host.started() else None)
    JANITOR.maybe_sweep()
    # Read on the loop, formatted in a worker thread (api.wire.loop_metrics).
    return HttpResponse(await render(REGISTRY), content_type=CONTENT_TYPE_LATEST)
