"""`QueueCounts`: what a metrics scrape reads of the queue, without a snapshot.

A `/metrics` scrape needs queued requests per tenant and priority, the
oldest head and the queriers, taken on the event loop. A full
`QueueSnapshot` builds a row per leaf and per tenant, sorted, and at
10,000 tenants that held the loop for tens of milliseconds on every scrape.
Counting here skips tenants with nothing queued, builds no rows and sorts
nothing but the queriers, so it costs a fraction of that: whoever formats
the counts sorts them, off the loop.

Every figure equals what `build_snapshot` reports for the same queue
(checked by the queue's property test): the same live counters are read.
"""

from __future__ import annotations

from collections.abc import Mapping
from math import inf
from typing import NamedTuple

from scheduler_core.nodes import TenantState
from scheduler_core.queue_snapshot import querier_rows
from scheduler_core.snapshot import QuerierSnapshot
from scheduler_core.tenant_querier_assignment import TenantQuerierAssignment

__all__ = ["PriorityCount", "QueueCounts", "build_counts"]


class PriorityCount(NamedTuple):
    """Requests queued in one leaf at one priority (a row per component)."""

    tenant_id: str
    component: str
    priority: int
    length: int
    priority_enabled: bool  # the tenant's query_priority flag (Cortex's "type" label)


class QueueCounts(NamedTuple):
    """The counts of a snapshot taken at `taken_at`, without its rows."""

    taken_at: float
    total: int
    # Unordered, non-zero counts only; summing a tenant's components is left
    # to whoever formats them, off the loop.
    by_priority: tuple[PriorityCount, ...]
    queued: Mapping[str, int]  # tenant -> queued requests, tenants with some only
    oldest_enqueued_at: float | None  # None when nothing is queued
    queriers: tuple[QuerierSnapshot, ...]  # as in a snapshot (no `waiting` marks)


def build_counts(
    *,
    taken_at: float,
    tenants: Mapping[str, TenantState],
    assignment: TenantQuerierAssignment,
    total: int,
) -> QueueCounts:
    rows: list[PriorityCount] = []
    append = rows.append
    queued: dict[str, int] = {}
    oldest = inf
    new_row = tuple.__new__  # as in queue_snapshot: skips the NamedTuple's __new__
    for tenant, state in tenants.items():
        waiting = state.outstanding - state.in_flight
        if not waiting:
            continue
        queued[tenant] = waiting
        enabled = state.priority_enabled
        for component, leaf in state.children.items():
            length = leaf.length
            if not length:
                continue
            if leaf.prios is None:
                append(new_row(PriorityCount, (tenant, component, leaf.prio, length, enabled)))
                head = leaf[0].enqueued_at
            else:
                pairs, head, _ = leaf.snapshot_row()
                for priority, count in pairs:
                    append(new_row(PriorityCount, (tenant, component, priority, count, enabled)))
            if head < oldest:
                oldest = head
    return QueueCounts(
        taken_at=taken_at,
        total=total,
        by_priority=tuple(rows),
        queued=queued,
        oldest_enqueued_at=None if oldest == inf else oldest,
        queriers=querier_rows(assignment),
    )
