"""The queue's gauges on `/metrics`, computed from the running scheduler at scrape time.

Queue length by tenant, priority and queue type, connected querier and
frontend clients and in-flight requests by component (Cortex's names), and
in-flight requests by tenant (ours), are
read from the queue's counts when a scrape comes, so they can never drift
from the queue. So are Mimir's newest queue signals, cheap here too: the
oldest wait comes from the leaf heads the counts already read, and the
per-tenant peak queue length since the scraper's previous scrape is a
running maximum (`QueuePeaks`) the metrics observer (`api.wire.metrics`)
raises on each enqueue (one dict look-up) and each scrape starts anew,
never a scan. Beside
them, the `queue_inspector_*` gauges the alert rules read: reserved
queriers' idle time and which replicas this one sees up.
"""

from __future__ import annotations

import threading
import time
from collections import Counter as Tally
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

from api.cluster import replica_board
from api.wire import runtime_host
from api.wire.exposition import RowFamily
from api.wire.loop_metrics import Build, LoopBoundCollector
from scheduler_core.queue_counts import PriorityCount, QueueCounts

__all__ = [
    "LENGTHS",
    "MAX_SCRAPERS",
    "PEAKS",
    "QueueLengthSeries",
    "SCRAPER_FORGET_SECONDS",
    "QueuePeaks",
    "SnapshotCollector",
    "scraping_as",
    "signal_families",
    "snapshot_families",
]

# An HA pair of Prometheus servers, a few operators' curls and dashboards'
# probes fit; each one remembered can keep a segment of peaks alive.
MAX_SCRAPERS = 16
# Longer than any scrape interval Prometheus is run with (its default is 1 m,
# Cortex's mixins use 15-60 s); a scraper silent longer is gone.
SCRAPER_FORGET_SECONDS = 900.0


class QueuePeaks:
    """Each tenant's peak queue length since a scraper's own previous scrape.

    Mimir resets its peak on every scrape, so a second Prometheus (an HA
    pair) or an operator's curl scraping the same replica would shorten, or
    steal, the first one's window: a burst between two of its scrapes could
    be reported to the curl only. Here each scraper (an identity the view
    gives: `api.wire.metrics_access.scraper_identity`) has its own window.

    `note` raises a running maximum in the current segment (one dict
    look-up: it runs on every enqueue). A scrape closes that segment and
    opens the next, seeded with the standing depths; a scraper's answer is
    the maximum over the segments after its own previous scrape, plus the
    standing depth, so a burst drained between two of its scrapes is still
    reported, and a drained tenant is reported 0 once, then dropped.

    At most `max_scrapers` scrapers are remembered (the least recently seen
    dropped first), and one not seen for `forget_after` seconds is dropped.
    Closed segments are kept only while a remembered scraper has not seen
    them, and those that no scraper's previous scrape separates are merged,
    so at most `max_scrapers` are kept. A scraper seen for the first time
    (or again after being dropped) gets the window since the previous scrape
    of the least recently seen scraper still remembered; when none is, since
    the last scrape of any; before any scrape, since process start. Callers
    with no identity (`None`) are one anonymous scraper.
    """

    def __init__(
        self,
        max_scrapers: int = MAX_SCRAPERS,
        forget_after: float = SCRAPER_FORGET_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_scrapers < 1:
            raise ValueError("max_scrapers must be at least 1")
        self._max_scrapers = max_scrapers
        self._forget_after = forget_after
        self._clock = clock
        self._current: dict[str, int] = {}
        # (sequence number of the scrape that closed it, peaks), oldest first.
        self._closed: list[tuple[int, dict[str, int]]] = []
        self._seq = 0
        # Scraper -> (the sequence number its previous scrape closed, when),
        # least recently seen first.
        self._scrapers: OrderedDict[str | None, tuple[int, float]] = OrderedDict()

    def note(self, tenant_id: str, length: int) -> None:
        if length > self._current.get(tenant_id, 0):
            self._current[tenant_id] = length

    def forget(self, tenant_id: str) -> None:
        """Drop an idle tenant's peaks, in every segment, along with its other series.

        Otherwise only scrapes drop it, and a replica nobody scrapes
        would keep a peak for every tenant it ever saw.
        """
        self._current.pop(tenant_id, None)
        for _, peaks in self._closed:
            peaks.pop(tenant_id, None)

    def tracked(self) -> int:
        """Tenants with a peak kept, in any segment."""
        return len(set(self._current).union(*(peaks for _, peaks in self._closed)))

    def collect(
        self, standing: Mapping[str, int], scraper: str | None = None
    ) -> list[tuple[str, int]]:
        """`scraper`'s peaks since its previous scrape, by tenant; opens the next segment."""
        now = self._clock()
        self._drop_unseen(now)
        previous = self._scrapers.pop(scraper, None)
        self._seq += 1
        self._closed.append((self._seq, self._current))
        out: dict[str, int] = {}
        for closed_at, peaks in reversed(self._closed):
            if previous is not None and closed_at <= previous[0]:
                break
            _raise(out, peaks)
        _raise(out, {t: n for t, n in standing.items() if n > 0})
        # Reported 0 once more after draining, to this scraper and to those
        # whose window includes the next segment.
        self._current = {t: standing.get(t, 0) for t, value in out.items() if value > 0}
        self._scrapers[scraper] = (self._seq, now)
        while len(self._scrapers) > self._max_scrapers:
            self._scrapers.popitem(last=False)
        self._compact()
        return sorted(out.items())

    def _drop_unseen(self, now: float) -> None:
        scrapers, dropped = self._scrapers, False
        while scrapers and now - next(iter(scrapers.values()))[1] > self._forget_after:
            scrapers.popitem(last=False)
            dropped = True
        if dropped:
            self._compact()

    def _compact(self) -> None:
        """Drop the segments every scraper has seen; merge those no scraper's mark separates."""
        marks = {mark for mark, _ in self._scrapers.values()}
        seen_by_all = min(marks, default=self._seq)
        kept: list[tuple[int, dict[str, int]]] = []
        carried: dict[str, int] | None = None
        for closed_at, peaks in self._closed:
            if closed_at <= seen_by_all:
                continue
            if carried is not None:
                if len(carried) > len(peaks):
                    carried, peaks = peaks, carried
                _raise(peaks, carried)
            if closed_at in marks:
                kept.append((closed_at, peaks))
                carried = None
            else:
                carried = peaks
        self._closed = kept


def _raise(into: dict[str, int], peaks: Mapping[str, int]) -> None:
    for tenant, value in peaks.items():
        if value > into.get(tenant, -1):
            into[tenant] = value


PEAKS = QueuePeaks()


LengthLabels = tuple[str, str, str]  # user, priority, type


def _length_labels(row: PriorityCount) -> LengthLabels:
    return row.tenant_id, str(row.priority), "priority" if row.priority_enabled else "fifo"


class QueueLengthSeries:
    """The queue-length series scrapes have shown, kept at 0 once drained.

    Cortex and Mimir move `cortex_query_scheduler_queue_length` on every
    enqueue and dequeue, so a drained tenant reads 0 until their
    inactive-user cleanup (15 minutes) deletes its series. Emitting only
    the non-zero rows made a series vanish the moment its tenant drained:
    a dashboard's line stopped instead of falling to 0, and a sum over a
    drained replica answered nothing. So a label set once shown is shown
    at 0 until the tenant-series janitor forgets its tenant
    (`METRICS_TENANT_IDLE_SECONDS`: `forget`, from api.wire.metrics).

    `drained` runs where a scrape is formatted, off the loop (one pass over
    every queued row: milliseconds at 10,000 tenants), and `forget` on the
    loop: a lock keeps the two apart.
    """

    def __init__(self) -> None:
        self._shown: dict[str, set[tuple[str, str]]] = {}
        self._lock = threading.Lock()

    def drained(self, current: Collection[LengthLabels]) -> list[LengthLabels]:
        """Note the label sets shown now; those shown before that are not among them."""
        with self._lock:
            out = [
                (tenant, priority, kind)
                for tenant, labels in self._shown.items()
                for priority, kind in labels
                if (tenant, priority, kind) not in current
            ]
            for tenant, priority, kind in current:
                self._shown.setdefault(tenant, set()).add((priority, kind))
        return out

    def forget(self, tenant_id: str) -> None:
        with self._lock:
            self._shown.pop(tenant_id, None)

    def tracked(self) -> int:
        """Tenants with a series kept."""
        return len(self._shown)


LENGTHS = QueueLengthSeries()
# Who the scrape under way is for (`scraping_as`); read where the peaks are taken.
_SCRAPER: ContextVar[str | None] = ContextVar("scraper", default=None)


@contextmanager
def scraping_as(scraper: str | None) -> Iterator[None]:
    """Take the peaks for `scraper` in this block (`api.wire.metrics.metrics_view`)."""
    token = _SCRAPER.set(scraper)
    try:
        yield
    finally:
        _SCRAPER.reset(token)


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
    Mimir (one series per scheduler); the peak has Mimir's `user` label
    (its window is the scraper's own: `QueuePeaks`). The
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
        "metric collection by the same scraper (each scraper has its own window).",
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


def snapshot_families(
    counts: QueueCounts | None, frontends: int, lengths: QueueLengthSeries | None = None
) -> list[RowFamily]:
    """The scrape-time gauges of the queue's counts (all zero before the runtime
    starts), with the queue-length series `lengths` has shown before at 0."""
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
    # Ours: with the queue length, what a tenant has outstanding, so that
    # enqueued = completed + failed + cancelled + queued + running per tenant.
    running = _gauge(
        "queue_inspector_inflight_requests",
        "Requests being run by querier workers, by tenant (a tenant with none is not listed).",
        ("user",),
    )
    families = [length, queriers, frontend_gauge, inflight, running]
    frontend_gauge.add_metric([], frontends)
    if counts is None:
        queriers.add_metric([], 0)
        return families
    per_priority: Tally[LengthLabels] = Tally()
    for row in counts.by_priority:
        per_priority[_length_labels(row)] += row.length
    if lengths is not None:
        per_priority.update(dict.fromkeys(lengths.drained(per_priority.keys()), 0))
    for labels, count in sorted(per_priority.items()):
        length.add_metric(list(labels), count)
    workers = [w for q in counts.queriers if q.connected for w in q.workers]
    queriers.add_metric([], len(workers))
    busy: Tally[str] = Tally(w.component for w in workers if w.request_id and w.component)
    for component, count in sorted(busy.items()):
        inflight.add_metric([component], count)
    # A worker holds its request (and so its tenant) until the request ends or
    # the worker leaves, which re-queues or fails it: busy workers are exactly
    # what is running.
    by_tenant: Tally[str] = Tally(w.tenant_id for w in workers if w.tenant_id is not None)
    for tenant, count in sorted(by_tenant.items()):
        running.add_metric([tenant], count)
    return families


class SnapshotCollector(LoopBoundCollector):
    """Gauges read from the running scheduler at scrape time.

    The queue's counts (not a whole snapshot: see `scheduler_core.queue_counts`),
    the scraper's peaks and the replicas are read on the loop; the families
    are built from them (immutable) wherever the scrape is formatted.
    """

    def take(self) -> Build:
        counts, frontends = None, 0
        if runtime_host.started():
            host = runtime_host.get_host()
            counts = host.runtime.queue.counts()
            frontends = host.frontend_clients
        peaks = PEAKS.collect(counts.queued if counts is not None else {}, _SCRAPER.get())
        replicas = replica_board.get_board().replica_states()
        return lambda: [
            *snapshot_families(counts, frontends, LENGTHS),
            *signal_families(counts, peaks, replicas),
        ]
