"""Queue snapshot → the queriers panel: workers, shards, reservations.

Pure functions, no Django. Shard membership is inverted once per snapshot
(tenant → queriers becomes querier → tenants) and only a count plus a few
names go to the browser, because with 10,000 tenants one querier may sit in
thousands of shards.

Cards are in ID order (then replica), an order that changes only as queriers
come and go: a card being read must not move as its state changes four
times a second. A reserved querier is flagged "reserved and idle" only once
it has run nothing for `RESERVED_IDLE_AFTER` (`reserved_idle`): that is the
case operators look for, a querier kept for a priority that never comes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler_core.snapshot import QuerierSnapshot, QueueSnapshot, WorkerSnapshot

__all__ = [
    "MAX_QUERIERS_SHOWN",
    "RESERVED_IDLE_AFTER",
    "SHARD_SAMPLE",
    "build_queriers",
    "reserved_idle",
    "shard_members",
]

MAX_QUERIERS_SHOWN = 200
SHARD_SAMPLE = 5
# The snapshot's `reserved_idle` is "no worker busy at this instant". A
# reserved querier that is working still has every worker idle for a moment
# between two requests, so at 4 ticks a second that flag came and went for a
# querier that was serving all along: the header figure flickered and the
# card changed state. Over a second a querier either ran something or not.
RESERVED_IDLE_AFTER = 1.0


def reserved_idle(querier: QuerierSnapshot, now: float) -> bool:
    """Whether `querier` holds a reservation and ran nothing in the last `RESERVED_IDLE_AFTER`.

    A worker's `since` is when it last took or finished a request, so the
    latest of them is when the querier last did anything.
    """
    if not querier.reserved_idle:
        return False
    last_active = max((w.since for w in querier.workers), default=None)
    return last_active is None or now - last_active >= RESERVED_IDLE_AFTER


def shard_members(snapshot: QueueSnapshot) -> tuple[dict[str, list[str]], int]:
    """Tenants per querier for sharded tenants, and how many tenants are unsharded.

    An unsharded tenant (shard None) may use every querier, so it is counted
    once rather than listed under each querier.
    """
    members: dict[str, list[str]] = {}
    unsharded = 0
    for tenant in snapshot.tenants:
        if tenant.shard is None:
            unsharded += 1
            continue
        for querier_id in tenant.shard:
            members.setdefault(querier_id, []).append(tenant.tenant_id)
    return members, unsharded


def _worker(worker: WorkerSnapshot, now: float) -> dict[str, Any]:
    since = round(max(0.0, now - worker.since), 1)
    if worker.request_id is not None:
        return {
            "id": worker.worker_id,
            "state": "busy",
            "tenant": worker.tenant_id,
            "component": worker.component,
            "priority": worker.priority,
            "request": worker.request_id,
            "for": since,
        }
    return {"id": worker.worker_id, "state": "waiting" if worker.waiting else "idle", "for": since}


def _querier(
    querier: QuerierSnapshot,
    held_idle: bool,
    members: Mapping[str, list[str]],
    unsharded: int,
    now: float,
) -> dict[str, Any]:
    shard = members.get(querier.querier_id, [])
    workers = [_worker(w, now) for w in querier.workers]
    if querier.shutting_down:
        state = "shutting-down"
    elif not querier.connected:
        state = "disconnected"
    elif held_idle:
        state = "reserved-idle"
    elif any(w["state"] == "busy" for w in workers):
        state = "busy"
    else:
        state = "idle"
    gone = querier.disconnected_at
    return {
        "id": querier.querier_id,
        "state": state,
        "connected": querier.connected,
        "shutting_down": querier.shutting_down,
        "disconnected_for": None if gone is None else round(max(0.0, now - gone), 1),
        "reserved_idle": held_idle,
        "reservations": [
            {"tenant": r.tenant_id, "priority": r.priority} for r in querier.reservations
        ],
        "shard_tenants": len(shard),
        "shard_sample": shard[:SHARD_SAMPLE],
        "unsharded_tenants": unsharded,
        "busy": sum(1 for w in workers if w["state"] == "busy"),
        "workers": workers,
    }


# A row: a querier, the replica it is connected to (None on one replica),
# and whether it is reserved and idle (`reserved_idle`).
_Row = tuple[QuerierSnapshot, str | None, bool]


def _by_id(row: _Row) -> tuple[str, str]:
    return (row[0].querier_id, row[1] or "")


def _idle_first(row: _Row) -> tuple[bool, str, str]:
    return (not row[2], *_by_id(row))


def build_queriers(
    snapshot: QueueSnapshot, replicas: Sequence[str] | None = None
) -> dict[str, Any]:
    """The queriers panel in ID order, at most `MAX_QUERIERS_SHOWN`.

    Past that many, the reserved-and-idle queriers are the ones kept, since
    they are what operators look for; the rows kept are still in ID order.
    With `replicas` (the replica of each of `snapshot.queriers`, from a
    merged scale-out view) each row names its replica; a querier connected
    to every replica then has one row per replica, side by side.
    """
    members, unsharded = shard_members(snapshot)
    now = snapshot.taken_at
    owners = list(replicas) if replicas is not None else [None] * len(snapshot.queriers)
    flags = [reserved_idle(q, now) for q in snapshot.queriers]
    every: list[_Row] = list(zip(snapshot.queriers, owners, flags, strict=True))
    shown = sorted(every, key=_idle_first)[:MAX_QUERIERS_SHOWN]
    shown.sort(key=_by_id)
    rows = []
    for querier, replica, held_idle in shown:
        row = _querier(querier, held_idle, members, unsharded, now)
        if replica is not None:
            row["replica"] = replica
        rows.append(row)
    idle = sorted((r for r in every if r[2]), key=_by_id)
    return {
        "total": len(every),
        "hidden": len(every) - len(shown),
        "reserved_idle": list(dict.fromkeys(q.querier_id for q, _, _ in idle)),
        "queriers": rows,
    }
