"""The queue's gauges on `/metrics`, computed from the running scheduler at scrape time.

Queue length by tenant, priority and queue type, connected querier and
frontend clients and in-flight requests by component (Cortex's names) are
read from the queue's counts when a scrape comes, so they can never drift
from the queue. So are Mimir's newest queue signals, cheap here too: the
oldest wait comes from the leaf heads the counts already read, and the
per-tenant peak queue length since the last scrape is a running maximum
(`QueuePeaks`) the metrics observer (`api.wire.metrics`) raises on each
enqueue (one dict look-up) and the scrape reseeds, never a scan. Beside
them, the `queue_inspector_*` gauges the alert rules read: reserved
queriers' idle time and which replicas this one sees up.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Mapping

from api.cluster import replica_board
from api.wire import runtime_host
from api.wire.exposition import RowFamily
from api.wire.loop_metrics import Build, LoopBoundCollector
from scheduler_core.queue_counts import QueueCounts

__all__ = [
    "PEAKS",
    "QueuePeaks",
    "SnapshotCollector",
    "signal_families",
    "snapshot_families",
]


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

    def forget(self, tenant_id: str) -> None:
        """Drop an idle tenant's peak along with its other series.

        Otherwise only a scrape drops it, and a replica nobody scrapes
        would keep a peak for every tenant it ever saw.
        """
        self._peak.pop(tenant_id, None)

    def collect(self, standing: Mapping[str, int]) -> list[tuple[str, int]]:
        out = {t: max(p, standing.get(t, 0)) for t, p in self._peak.items()}
        for tenant, length in standing.items():
            if length > 0 and tenant not in out:
                out[tenant] = length
        self._peak = {t: standing.get(t, 0) for t, value in out.items() if value > 0}
        return sorted(out.items())


PEAKS = QueuePeaks()


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
