"""`/metrics`: Prometheus exposition with Mimir/Cortex's query-scheduler names.

This module holds the served registry, the counters and the queue-duration
histogram a runtime observer (`MetricsObserver`) feeds as events happen,
the registration of every other collector, and the view. The gauges
(queue length, connected clients, in-flight requests, Mimir's peak and
oldest wait) are computed from the queue at scrape time
(`api.wire.queue_metrics`), so they can never drift from the queue. The
view is async so the queue is read on the runtime's own loop, never from a
worker thread; who may scrape is `api.wire.metrics_access`'s.

Series labelled by tenant are removed once the tenant has had nothing
queued or in flight for `METRICS_TENANT_IDLE_SECONDS` (default 900, as
Cortex's inactive-user cleanup), so unknown tenant IDs cannot pile up
series (`api.wire.tenant_series`).
"""

from __future__ import annotations

import asyncio
import gzip
import time
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers
from prometheus_client import (
    CONTENT_TYPE_PLAIN_0_0_4,
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.exposition import gzip_accepted

from api.wire import runtime_host
from api.wire.config_apply import on_tenant_removed
from api.wire.config_metrics import ConfigVersionCollector, ReconcileRecord
from api.wire.failure_metrics import FailureCounter
from api.wire.grpc.tls_handshakes import FAILURES as TLS_HANDSHAKE_FAILURES
from api.wire.invalid_config_metrics import InvalidConfigCollector, host_invalid_stored
from api.wire.loop_load import LoopLoad, LoopLoadCollector
from api.wire.loop_metrics import TallyCounter, TallyHistogram, register_loop_bound, render
from api.wire.metrics_access import scrape_refusal, scraper_identity
from api.wire.queue_metrics import LENGTHS, PEAKS, QueuePeaks, SnapshotCollector, scraping_as
from api.wire.rule_metrics import RuleStatsCollector
from api.wire.tenant_series import DEFAULT_IDLE_SECONDS, TenantSeriesJanitor
from scheduler_core.model import Request
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
# The runtime's `on_completed`, reported once per request when a querier's
# result ended it: a late or repeated result finds nothing to complete and is
# not reported. With ENQUEUED, CANCELLED and FAILED above and the queue's
# gauges (queued, in flight), every accepted request is accounted for per
# tenant: one scrape reads them all in one loop turn, so they add up exactly.
COMPLETED = TallyCounter(
    "queue_inspector_completed_requests_total",
    "Requests that ended with their querier's result delivered or relayed to their "
    "frontend, whatever its HTTP status, by tenant: counted once per request, never "
    "for a late or duplicate result the scheduler drops.",
    ("user",),
    registry=REGISTRY,
)
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


def _runtime_clock() -> float:
    """The running scheduler's clock (so its tests' fake clock drives the janitor)."""
    if runtime_host.started():
        return runtime_host.get_runtime().clock()
    return time.monotonic()


def _idle_seconds() -> float:
    return float(getattr(settings, "METRICS_TENANT_IDLE_SECONDS", DEFAULT_IDLE_SECONDS))


# The counters labelled by tenant alone, each a series per tenant to forget.
_BY_TENANT = (CANCELLED, COMPLETED, QUERIER_SECONDS)
# Per-tenant series go once a tenant has had nothing queued or in flight for
# METRICS_TENANT_IDLE_SECONDS (api.wire.tenant_series).
JANITOR = TenantSeriesJanitor(_runtime_clock, _idle_seconds)
# The priorities each tenant's labelled counters were used with, to remove
# exactly those series.
_PRIORITIES: dict[str, set[str]] = {}
# Tenants the janitor forgot while they were configured, their rule counters
# kept: those go when the tenant's block does (`_tenant_removed`), unless it
# is seen again first, and then the janitor forgets it anew once idle.
_RULES_KEPT: set[str] = set()


def _forget_tenant(tenant_id: str) -> None:
    for priority in _PRIORITIES.pop(tenant_id, ()):
        ENQUEUED.remove(tenant_id, priority)
        DISCARDED.remove(tenant_id, priority)
    for counter in _BY_TENANT:
        counter.remove(tenant_id)
    FAILED.forget(tenant_id)
    PEAKS.forget(tenant_id)
    LENGTHS.forget(tenant_id)
    if runtime_host.started():
        # Rule counters of a tenant nobody configured are as unbounded as ours.
        host = runtime_host.get_host()
        if host.tenant_configured(tenant_id):
            _RULES_KEPT.add(tenant_id)
        else:
            host.admission_log.stats.forget(tenant_id)


def _tenant_removed(runtime: SchedulerRuntime, tenant_id: str) -> None:
    """A configured tenant the janitor already forgot lost its block: its rule counters go."""
    if tenant_id in _RULES_KEPT and runtime_host.started():
        host = runtime_host.get_host()
        if runtime is host.runtime:
            _RULES_KEPT.discard(tenant_id)
            host.admission_log.stats.forget(tenant_id)


def _seen_again(tenant_id: str) -> None:
    # On every request: a set's truthiness first, the discard only while any are kept.
    if _RULES_KEPT:
        _RULES_KEPT.discard(tenant_id)


JANITOR.on_forget(_forget_tenant)
on_tenant_removed(_tenant_removed)
_counted_runtime: list[Any] = [None]


def _same_runtime(runtime: SchedulerRuntime | None) -> None:
    """The janitor's counts belong to one runtime; a new one starts them again."""
    if runtime is not None and runtime is not _counted_runtime[0]:
        if _counted_runtime[0] is not None:
            JANITOR.restart()
            # The new host counts rules afresh; the old one's are gone with it.
            _RULES_KEPT.clear()
        _counted_runtime[0] = runtime


def _note_priority(tenant: str, priority: str) -> None:
    seen = _PRIORITIES.get(tenant)
    if seen is None:
        seen = _PRIORITIES[tenant] = set()
    seen.add(priority)


def _run_ended(request: Request) -> None:
    """The querier time of a run that ended (the request's end, or its querier's loss)."""
    # `dispatched_at` is on the runtime's clock, the host's time.monotonic;
    # None for a request that ended while queued (no querier time).
    started = request.dispatched_at
    if started is not None:
        QUERIER_SECONDS.add(time.monotonic() - started, request.tenant_id)


def _ended(request: Request) -> None:
    """What every end (completed, failed or cancelled) counts beside its own counter."""
    _run_ended(request)
    JANITOR.ended(request.tenant_id)


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
        _seen_again(tenant)
        if runtime is not None:
            PEAKS.note(tenant, runtime.queue.tenant_length(tenant))

    def on_rejected(self, request: Request, reason: str) -> None:
        # Only the outstanding limit reports here (the runtime's enqueue).
        tenant, priority = request.tenant_id, str(request.priority)
        DISCARDED.inc(tenant, priority)
        _note_priority(tenant, priority)
        _seen_again(tenant)
        JANITOR.seen(tenant)

    def on_refused(self, tenant_id: str) -> None:
        # Its rule counters' series go once it has been idle for the delay,
        # like any refused tenant's (a federated `a|b` inherits a's rules).
        # Seen again before the janitor may sweep: with no idle delay it
        # forgets the tenant within `seen`, and a later `_seen_again` would
        # drop the keep note and so leave its rule series behind for good.
        _seen_again(tenant_id)
        JANITOR.seen(tenant_id)

    def on_cancelled(self, request: Request) -> None:
        CANCELLED.inc(request.tenant_id)
        _ended(request)

    def on_completed(self, request: Request) -> None:
        COMPLETED.inc(request.tenant_id)
        _ended(request)

    def on_failed(self, request: Request, reason: str) -> None:
        FAILED.count(request.tenant_id, reason)
        _ended(request)

    def on_dispatched(self, request: Request, querier_id: str, worker_id: int, wait: float) -> None:
        QUEUE_DURATION.observe(wait, request.component, str(request.priority))

    def on_interrupted(self, request: Request) -> None:
        _run_ended(request)


register_loop_bound(REGISTRY, SnapshotCollector())
register_loop_bound(REGISTRY, RuleStatsCollector())


def _loop_load() -> LoopLoad | None:
    return runtime_host.get_host().loop_load if runtime_host.started() else None


def _reconciles() -> ReconcileRecord | None:
    return runtime_host.get_host().reconciles if runtime_host.started() else None


register_loop_bound(REGISTRY, LoopLoadCollector(_loop_load))
register_loop_bound(REGISTRY, ConfigVersionCollector(runtime_host.config_version, _reconciles))
register_loop_bound(REGISTRY, InvalidConfigCollector(host_invalid_stored))
# The lean gRPC door's refused TLS handshakes, by a fixed reason, 0 before any.
REGISTRY.register(TLS_HANDSHAKE_FAILURES)
# What every Prometheus client exports, as Cortex's scheduler does (process_*;
# python_* in place of go_*): process_cpu_seconds_total over dispatched
# requests is the scheduler's CPU per query.
ProcessCollector(registry=REGISTRY)
PlatformCollector(registry=REGISTRY)
GCCollector(registry=REGISTRY)
runtime_host.add_observer(MetricsObserver())


# Prometheus asks for gzip on every scrape, and Cortex's scheduler (Go's
# promhttp) answers with it. Our scrape, 3.4 MB at 10,000 tenants, shrinks
# about ninefold at level 1; the library's default level 9 takes six times
# the CPU to save a quarter more. zlib lets go of the GIL: the loop runs on.
_GZIP_LEVEL = 1


async def metrics_view(request: HttpRequest) -> HttpResponse:
    """Open unless `METRICS_REQUIRE_LOGIN`, as Prometheus scrapers expect."""
    checked = bool(getattr(settings, "METRICS_REQUIRE_LOGIN", False))
    if checked:
        refusal = await scrape_refusal(request)
        if refusal is not None:
            return refusal
    scraper = await scraper_identity(request, checked)
    # Before the counters are read: idle tenants' series are gone from this scrape.
    _same_runtime(runtime_host.get_runtime() if runtime_host.started() else None)
    JANITOR.maybe_sweep()
    # Read on the loop, formatted in a worker thread (api.wire.loop_metrics);
    # the peaks since this scraper's own previous scrape.
    with scraping_as(scraper):
        body = await render(REGISTRY)
    gzipped = gzip_accepted(request.headers.get("Accept-Encoding", ""))
    if gzipped:
        body = await asyncio.to_thread(gzip.compress, body, _GZIP_LEVEL)
    # The text is format 0.0.4 (generate_latest's, names underscored) and says
    # so, as the library's own handler and Cortex's scheduler answer a scrape;
    # CONTENT_TYPE_LATEST claims format 1.0.0, which this text is not.
    response = HttpResponse(body, content_type=CONTENT_TYPE_PLAIN_0_0_4)
    if gzipped:
        response["Content-Encoding"] = "gzip"
    patch_vary_headers(response, ("Accept-Encoding",))
    return response
