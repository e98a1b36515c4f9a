"""Building a `QueueSnapshot` from the queue's live counters.

Cost is per leaf, tenant and worker, never per queued request: leaves keep
per-priority counts and live heads, so a snapshot of 10,000 tenants stays
in the low milliseconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from scheduler_core.leaf import Leaf
from scheduler_core.model import COMPONENTS, QueueConfig
from scheduler_core.nodes import TenantState
from scheduler_core.snapshot import (
    LeafSnapshot,
    QuerierSnapshot,
    QueueSnapshot,
    Reservation,
    TenantSnapshot,
    WorkerSnapshot,
)
from scheduler_core.tenant_querier_assignment import QuerierState, TenantQuerierAssignment

__all__ = ["build_snapshot"]


def build_snapshot(
    *,
    taken_at: float,
    config: QueueConfig,
    tenants: Mapping[str, TenantState],
    assignment: TenantQuerierAssignment,
    total: int,
) -> QueueSnapshot:
    """Leaves by (tenant, component order); tenants and queriers by id."""
    ordered = sorted(tenants.items())
    return QueueSnapshot(
        taken_at=taken_at,
        layout=config.layout,
        component_selection=config.component_selection,
        total=total,
        leaves=_leaves(ordered),
        tenants=_tenants(ordered, assignment),
        queriers=tuple(
            _querier(assignment.queriers[q], assignment) for q in sorted(assignment.queriers)
        ),
    )


# tuple.__new__ skips the NamedTuple's Python-level __new__: rows are built
# by the ten thousand, and the field order is fixed by the class.
_new_row = tuple.__new__


def _leaves(ordered: list[tuple[str, TenantState]]) -> tuple[LeafSnapshot, ...]:
    out: list[LeafSnapshot] = []
    append = out.append
    for tenant, state in ordered:
        mine = state.children
        if not mine:
            continue
        leaves: Iterable[tuple[str, Leaf]] = (
            mine.items() if len(mine) == 1 else [(c, mine[c]) for c in COMPONENTS if c in mine]
        )
        for component, leaf in leaves:
            length = leaf.length
            if leaf.prios is None and length:
                # snapshot_row's single-priority case, inlined (most leaves).
                by_priority: tuple[tuple[int, int], ...] = ((leaf.prio, length),)
                oldest = leaf[0].enqueued_at
            else:
                by_priority, oldest = leaf.snapshot_row()
            append(_new_row(LeafSnapshot, (tenant, component, length, by_priority, oldest)))
    return tuple(out)


def _tenants(
    ordered: list[tuple[str, TenantState]], assignment: TenantQuerierAssignment
) -> tuple[TenantSnapshot, ...]:
    shards = assignment.shards
    reserved = assignment.reserved_by_tenant
    out: list[TenantSnapshot] = []
    append = out.append
    for tenant, state in ordered:
        mine = reserved.get(tenant)
        reservations = (
            tuple(Reservation(tenant, prio, q) for q, prio in sorted(mine.items())) if mine else ()
        )
        row = (
            tenant,
            state.outstanding - state.in_flight,
            state.cap,
            shards.get(tenant),
            reservations,
            state.priority_enabled,
        )
        append(_new_row(TenantSnapshot, row))
    return tuple(out)


def _querier(querier: QuerierState, assignment: TenantQuerierAssignment) -> QuerierSnapshot:
    workers: list[WorkerSnapshot] = []
    busy = False
    for worker_id in sorted(querier.workers):
        worker = querier.workers[worker_id]
        request = worker.request
        if request is None:
            workers.append(
                WorkerSnapshot(
                    querier.querier_id, worker_id, None, None, None, None, worker.since, False
                )
            )
        else:
            busy = True
            workers.append(
                WorkerSnapshot(
                    querier.querier_id,
                    worker_id,
                    request.id,
                    request.tenant_id,
                    request.component,
                    request.priority,
                    worker.since,
                    False,
                )
            )
    mine = assignment.reserved_by_querier.get(querier.querier_id)
    reservations = (
        tuple(Reservation(t, prio, querier.querier_id) for t, prio in sorted(mine.items()))
        if mine
        else ()
    )
    return QuerierSnapshot(
        querier.querier_id,
        tuple(workers),
        querier.shutting_down,
        querier.disconnected_at is None,
        querier.disconnected_at,
        reservations,
        bool(reservations) and not busy,
    )
