"""`queue/` and `queriers/`: the live scheduler state of this process.

The runtime lives on the ASGI event loop and is not thread-safe, while DRF
views run in a worker thread; `async_to_sync` from that thread runs the
snapshot on the loop that called us (Daphne's, where the runtime host
started the runtime), so the snapshot is taken between two queue steps.
In a process that serves no ASGI (tests with a plain client, `manage.py`)
there is no runtime, and the answer says so with `"running": false`
rather than inventing numbers. When peer replicas publish summaries
(scale-out, `api.cluster.replica_board`), both answers cover the whole service: the
local queue live, peers' as of their last summary, with a `replicas` block
and each querier row naming the replica it is connected to. Snapshots are paged here, on the server:
the top tenants by depth plus one "others" aggregate, so the answer's size
does not grow with the number of tenants.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from asgiref.sync import async_to_sync
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.cluster.replica_board import get_board
from api.cluster.replicas import MergedView
from api.rest.query_params import bool_parameter, choice_param, int_param, int_parameter
from api.rest.serializers_snapshot import QueriersSnapshotSerializer, QueueSnapshotSerializer
from api.rest.views.base import ApiView, errors, flag
from api.store import selectors
from api.wire import runtime_host
from api.wire.queue_peers import UNHEARD_NOTE, peers_unheard
from scheduler_core.federation import org_limits
from scheduler_core.model import COMPONENTS
from scheduler_core.snapshot import LeafSnapshot, QuerierSnapshot, QueueSnapshot, TenantSnapshot

__all__ = [
    "QueriersView",
    "QueueView",
    "queriers_view",
    "queue_view",
    "replicas_header",
    "take_frontends",
    "take_snapshot",
    "take_view",
    "with_replicas",
]

DEFAULT_LIMIT = 50
MAX_LIMIT = 500


async def _snapshot_on_loop() -> QueueSnapshot | None:
    if not runtime_host.started():
        return None
    return runtime_host.get_runtime().snapshot()


def take_snapshot() -> QueueSnapshot | None:
    """This process's queue snapshot, or None when no runtime runs here."""
    return async_to_sync(_snapshot_on_loop)()


async def _frontends_on_loop() -> list[dict[str, Any]]:
    return [row._asdict() for row in runtime_host.frontends()]


def merged_frontends(merged: MergedView, local: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """This replica's frontends and the rows its peers publish, each naming its replica."""
    rows = [{**row, "replica": merged.local} for row in local]
    for peer in merged.peer_frontends:
        rows += [{**row._asdict(), "replica": peer.replica} for row in peer.rows]
    return rows


def take_frontends() -> list[dict[str, Any]]:
    """The frontends connected to this replica, read on the scheduler's loop."""
    return async_to_sync(_frontends_on_loop)()


async def _with_own_limits(merged: MergedView, local: QueueSnapshot) -> MergedView:
    """The merge, with this replica's limits on the tenants queued only on peers.

    The merge knows no config, so such a tenant's row has no limits; every
    replica applies the same config, so ours are the ones the tenant's own
    replica reports: the queue-wide default unless configured, a federated
    ID's derived from its tenants' (`org_limits`), as its queue's are. Its
    shard and reservations are that replica's runtime state and stay empty.
    """
    runtime = runtime_host.get_runtime()
    held = {tenant.tenant_id for tenant in local.tenants}
    tenants: list[TenantSnapshot] = []
    for tenant in merged.snapshot.tenants:
        if tenant.tenant_id not in held:
            limits = org_limits(runtime, tenant.tenant_id)
            tenant = tenant._replace(
                max_outstanding=runtime.config.outstanding_limit(limits),
                priority_enabled=limits.query_priority.enabled,
            )
        tenants.append(tenant)
    return replace(merged, snapshot=replace(merged.snapshot, tenants=tuple(tenants)))


def take_view() -> tuple[QueueSnapshot, MergedView | None] | None:
    """The local snapshot and, when peers publish, the service-wide merge of it."""
    snap = take_snapshot()
    if snap is None:
        return None
    merged = get_board().view(snap)
    if merged is None:
        return snap, None
    return snap, async_to_sync(_with_own_limits)(merged, snap)


def replicas_header(merged: MergedView | None, unheard: bool) -> dict[str, Any] | None:
    """The answer's `replicas` block: the merge's, or, before this replica has
    heard of its peers, one saying so; None for a lone replica.

    Without it a replica's first answers after it starts (the runtime not
    started yet, or its first registry read not done) passed for a lone
    replica's: a script could not tell one from the other. `unheard` is
    `peers_unheard()` read *before* the answer's snapshot: read after, the
    first registry read could land between the two and the answer carried
    neither a merge nor the note.
    """
    if merged is not None:
        return merged.header()
    if not unheard:
        return None
    return {
        "count": 1,
        "ids": [get_board().own_id],
        "missing": [],
        "peers_max_age": 0.0,
        "note": UNHEARD_NOTE,
    }


def with_replicas(data: dict[str, Any], merged: MergedView | None, unheard: bool) -> dict[str, Any]:
    """`data` with the `replicas` block `replicas_header` gives, if any."""
    header = replicas_header(merged, unheard)
    return data if header is None else {**data, "replicas": header}


def _limit(request: Request) -> int:
    return int_param(request, "limit", default=DEFAULT_LIMIT, minimum=1, maximum=MAX_LIMIT)


def _component(request: Request) -> str | None:
    return choice_param(request, "component", list(COMPONENTS))


def _leaf_row(leaf: LeafSnapshot, now: float) -> dict[str, Any]:
    return {
        "component": leaf.component,
        "length": leaf.length,
        "by_priority": {str(priority): count for priority, count in leaf.by_priority},
        "oldest_wait_seconds": max(0.0, now - leaf.oldest_enqueued_at) if leaf.length else 0.0,
        # Actor sub-queues (Loki's hierarchical queues), parents first, capped
        # by the snapshot; an "others" row sums siblings not listed.
        "actors": [
            {
                "path": list(actor.path),
                "length": actor.length,
                "oldest_wait_seconds": max(0.0, now - actor.oldest_enqueued_at),
                "others": actor.others,
            }
            for actor in leaf.actors
        ],
    }


def _tenant_row(
    tenant_id: str, tenant: TenantSnapshot | None, leaves: list[LeafSnapshot], now: float
) -> dict[str, Any]:
    reservations: dict[str, list[str]] = defaultdict(list)
    for reservation in tenant.reservations if tenant else ():
        reservations[str(reservation.priority)].append(reservation.querier_id)
    return {
        "tenant_id": tenant_id,
        "length": sum(leaf.length for leaf in leaves),
        "max_outstanding": tenant.max_outstanding if tenant else 0,
        "shard": list(tenant.shard) if tenant and tenant.shard is not None else None,
        "priority_enabled": bool(tenant and tenant.priority_enabled),
        "reservations": dict(reservations),
        "components": [_leaf_row(leaf, now) for leaf in leaves],
    }


def _by_component(leaves: list[LeafSnapshot]) -> dict[str, int]:
    totals = dict.fromkeys(COMPONENTS, 0)
    for leaf in leaves:
        totals[leaf.component] = totals.get(leaf.component, 0) + leaf.length
    return totals


def queue_view(
    snap: QueueSnapshot, *, search: str = "", component: str | None = None, limit: int = 50
) -> dict[str, Any]:
    """The paged queue: `limit` deepest matching tenants, the rest as `others`.

    `total` and `by_component` describe the whole queue; the tenant rows
    and `others` only the tenants whose ID contains `search` (any case),
    counting only `component`'s queues when one is given.
    """
    leaves: dict[str, list[LeafSnapshot]] = defaultdict(list)
    for leaf in snap.leaves:
        if component is None or leaf.component == component:
            leaves[leaf.tenant_id].append(leaf)
    known = {tenant.tenant_id: tenant for tenant in snap.tenants}
    needle = search.lower()
    matching = sorted(
        (tid for tid in set(known) | set(leaves) if needle in tid.lower()),
        key=lambda tid: (-sum(leaf.length for leaf in leaves.get(tid, ())), tid),
    )
    shown, rest = matching[:limit], matching[limit:]
    rest_leaves = [leaf for tid in rest for leaf in leaves.get(tid, ())]
    return {
        "running": True,
        "taken_at": snap.taken_at,
        "layout": snap.layout,
        "component_selection": snap.component_selection,
        "total": snap.total,
        "by_component": _by_component(list(snap.leaves)),
        "tenant_count": len(matching),
        "tenants": [
            _tenant_row(tid, known.get(tid), leaves.get(tid, []), snap.taken_at) for tid in shown
        ],
        "others": {
            "tenants": len(rest),
            "length": sum(leaf.length for leaf in rest_leaves),
            "by_component": _by_component(rest_leaves),
        },
    }


def _querier_row(querier: QuerierSnapshot, now: float) -> dict[str, Any]:
    workers = [
        {
            "worker_id": w.worker_id,
            "state": "busy" if w.request_id is not None else "waiting" if w.waiting else "idle",
            "request_id": w.request_id,
            "tenant_id": w.tenant_id,
            "component": w.component,
            "priority": w.priority,
            "seconds_in_state": max(0.0, now - w.since),
        }
        for w in querier.workers
    ]
    return {
        "querier_id": querier.querier_id,
        "connected": querier.connected,
        "shutting_down": querier.shutting_down,
        "reserved_idle": querier.reserved_idle,
        "busy_workers": sum(1 for w in querier.workers if w.request_id is not None),
        "reservations": [
            {"tenant_id": r.tenant_id, "priority": r.priority} for r in querier.reservations
        ],
        "workers": workers,
    }


def queriers_view(
    snap: QueueSnapshot,
    *,
    search: str = "",
    reserved_idle_only: bool = False,
    limit: int = 50,
    replicas: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Queriers by ID (reserved-and-idle ones listed first), at most `limit`.

    `replicas[i]`, when given, names the replica `snap.queriers[i]` is
    connected to; rows then carry it, and a querier connected to several
    replicas has one row per replica.
    """
    needle = search.lower()
    owners = list(replicas) if replicas is not None else [None] * len(snap.queriers)
    chosen = [
        (q, owner)
        for q, owner in zip(snap.queriers, owners, strict=True)
        if needle in q.querier_id.lower() and (q.reserved_idle or not reserved_idle_only)
    ]
    chosen.sort(key=lambda pair: (not pair[0].reserved_idle, pair[0].querier_id, pair[1] or ""))
    rows = []
    for querier, owner in chosen[:limit]:
        row = _querier_row(querier, snap.taken_at)
        if owner is not None:
            row["replica"] = owner
        rows.append(row)
    return {
        "running": True,
        "taken_at": snap.taken_at,
        "count": len(chosen),
        "reserved_idle": list(
            dict.fromkeys(q.querier_id for q in snap.queriers if q.reserved_idle)
        ),
        "queriers": rows,
    }


def _stopped_queue() -> dict[str, Any]:
    config = selectors.queue_config_get()
    empty = dict.fromkeys(COMPONENTS, 0)
    return {
        "running": False,
        "taken_at": None,
        "layout": config.layout,
        "component_selection": config.component_selection,
        "total": 0,
        "by_component": empty,
        "tenant_count": 0,
        "tenants": [],
        "others": {"tenants": 0, "length": 0, "by_component": dict(empty)},
    }


_SEARCH = OpenApiParameter("search", OpenApiTypes.STR, description="ID substring (any case)")
_LIMIT = int_parameter(
    "limit", default=DEFAULT_LIMIT, minimum=1, maximum=MAX_LIMIT, description="rows"
)


class QueueView(ApiView):
    """The queue tree's totals and its deepest tenants."""

    @extend_schema(
        operation_id="queue_retrieve",
        summary="Show the queue's totals",
        parameters=[
            _SEARCH,
            _LIMIT,
            OpenApiParameter("component", OpenApiTypes.STR, enum=list(COMPONENTS)),
        ],
        responses={200: QueueSnapshotSerializer, **errors(400)},
    )
    def get(self, request: Request) -> Response:
        component, limit = _component(request), _limit(request)
        unheard = peers_unheard()
        taken = take_view()
        if taken is None:
            return Response(with_replicas(_stopped_queue(), None, unheard))
        local, merged = taken
        search = request.query_params.get("search", "")
        snap = merged.snapshot if merged else local
        data = queue_view(snap, search=search, component=component, limit=limit)
        return Response(with_replicas(data, merged, unheard))


class QueriersView(ApiView):
    """Every querier, its workers and reservations."""

    @extend_schema(
        operation_id="queriers_retrieve",
        summary="List queriers",
        parameters=[
            _SEARCH,
            _LIMIT,
            bool_parameter("reserved_idle", "only those"),
        ],
        responses={200: QueriersSnapshotSerializer, **errors(400)},
    )
    def get(self, request: Request) -> Response:
        limit, only = _limit(request), flag(request, "reserved_idle")
        unheard = peers_unheard()
        taken = take_view()
        if taken is None:
            empty = {"running": False, "taken_at": None, "count": 0, "reserved_idle": []}
            rows = {**empty, "queriers": [], "frontends": []}
            return Response(with_replicas(rows, None, unheard))
        local, merged = taken
        search = request.query_params.get("search", "")
        frontends = take_frontends()
        if merged is None:
            data = queriers_view(local, search=search, reserved_idle_only=only, limit=limit)
            return Response(with_replicas({**data, "frontends": frontends}, None, unheard))
        data = queriers_view(
            merged.snapshot,
            search=search,
            reserved_idle_only=only,
            limit=limit,
            replicas=merged.querier_replicas,
        )
        data["replicas"] = merged.header()
        data["frontends"] = merged_frontends(merged, frontends)
        data["frontends_missing"] = list(merged.frontends_missing)
        return Response(data)
