"""Queue snapshot → the queriers panel: workers, shards, reservations.

Pure functions, no Django. Shard membership is inverted once per snapshot
(tenant → queriers becomes querier → tenants) and only a count plus a few
names go to the browser, because with 10,000 tenants one querier may sit in
thousands of shards. Reserved-and-idle queriers are sorted first: they are
the case operators look for (a querier kept for a priority that never comes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler_core.snapshot import QuerierSnapshot, QueueSnapshot, WorkerSnapshot

__all__ = ["MAX_QUERIERS_SHOWN", "SHARD_SAMPLE", "build_queriers", "shard_members"]

MAX_QUERIERS_SHOWN = 200
SHARD_SAMPLE = 5


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
    querier: QuerierSnapshot, members: Mapping[str, list[str]], unsharded: int, now: float
) -> dict[str, Any]:
    shard = members.get(querier.querier_id, [])
    workers = [_worker(w, now) for w in querier.workers]
    if querier.shutting_down:
        state = "shutting-down"
    elif not querier.connected:
        state = "disconnected"
    elif querier.reserved_idle:
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
        "reserved_idle": querier.reserved_idle,
        "reservations": [
            {"tenant": r.tenant_id, "priority": r.priority} for r in querier.reservations
        ],
        "shard_tenants": len(shard),
        "shard_sample": shard[:SHARD_SAMPLE],
        "unsharded_tenants": unsharded,
        "busy": sum(1 for w in workers if w["state"] == "busy"),
        "workers": workers,
    }


def _rank(row: tuple[QuerierSnapshot, str | None]) -> tuple[int, str, str]:
    querier, replica = row
    return (0 if querier.reserved_idle else 1, querier.querier_id, replica or "")


def build_queriers(
    snapshot: QueueSnapshot, replicas: Sequence[str] | None = None
) -> dict[str, Any]:
    """The queriers panel: reserved-idle first, then by ID, at most `MAX_QUERIERS_SHOWN`.

    With `replicas` (the replica of each of `snapshot.queriers`, from a
    merged scale-out view) each row names its replica; a querier connected
    to every replica then has one row per replica, side by side.
    """
    members, unsharded = shard_members(snapshot)
    now = snapshot.taken_at
    owners = list(replicas) if replicas is not None else [None] * len(snapshot.queriers)
    ordered = sorted(zip(snapshot.queriers, owners, strict=True), key=_rank)
    shown = ordered[:MAX_QUERIERS_SHOWN]
    rows = []
    for querier, replica in shown:
        row = _querier(querier, members, unsharded, now)
        if replica is not None:
            row["replica"] = replica
        rows.append(row)
    return {
        "total": len(ordered),
        "hidden": len(ordered) - len(shown),
        "reserved_idle": list(dict.fromkeys(q.querier_id for q, _ in ordered if q.reserved_idle)),
        "queriers": rows,
    }
