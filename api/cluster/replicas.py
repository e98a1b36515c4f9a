"""Replica summaries: each scheduler replica publishes its queue, every replica merges.

In scale-out mode (REDIS_URL set) every Daphne process is one scheduler
replica with its own queue. Every `PUBLISH_SECONDS` each replica writes a
compact summary of its own queue to Redis (`<prefix>:qi:replica:<id>`, a key
with a short TTL, plus a sorted-set registry of IDs so readers never SCAN)
and reads its peers' summaries into a process-wide board. The inspector and
the REST snapshots then merge the *live* local snapshot with those cached
summaries, so a page view costs no Redis round trip and peers' data is at
most about two publish periods old.

Times cross process boundaries as ages, never as clock readings: each
replica's queue runs on its own monotonic clock, so a summary says "oldest
waiting 3.2 s at wall time T", and the reader rebases that age onto its own
queue clock, adding how long ago T was. The board first moves T onto the
reader's wall clock (`api.cluster.replica_board`: by the age Redis gives
the summary's key), so replicas' clocks need not agree; a T still ahead of
ours counts as age 0.

A summary lists at most `PUBLISHED_LEAVES` queues (the longest), each under
an org ID of at most `PUBLISHED_ORG_ID_CHARS` characters, and counts the
rest in `cut` ([queues, requests]); its `total` stays whole. Every queue went
before: one frontend sending 100 requests under 900 KB federated org IDs
made an 89 MB summary, rewritten every half second, and its peers, reading
it, took its replica for down and back by turns. The merge counts what peers
cut as `MergedView.unlisted`, and the header says so. Where an org ID is
shown, not counted (a running request's, a reservation's), a longer one is
cut to that length and ends in `SHORTENED_MARK`; the busiest tenants' usage
rows list none longer (their totals still count it).

A summary also carries the replica's frontends, capped, with true totals
(`api.cluster.replica_frontends`). A summary without them (an older replica) is
still read; the merge then names that replica as one whose frontends are
not listed.

Everything here is pure and unit-tested: the summary format (`summarize`,
`PeerSummary.parse`) and the merge (`merge`; the header's stats,
`api.cluster.replica_stats`);
`api.cluster.replica_board` holds the peers read from Redis and runs the publish
and read loop on the runtime's event loop.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from api.cluster.replica_frontends import (
    FrontendRow,
    ReplicaFrontends,
    frontends_block,
    parse_frontends_block,
)
from api.cluster.replica_usage import rows_within
from scheduler_core.snapshot import (
    LeafSnapshot,
    QuerierSnapshot,
    QueueSnapshot,
    Reservation,
    TenantSnapshot,
    WorkerSnapshot,
)

__all__ = [
    "FORMAT_VERSION",
    "MalformedSummary",
    "MergedView",
    "PeerSummary",
    "merge",
    "replica_id",
    "summarize",
]

FORMAT_VERSION = 1
# Queues a summary lists, the longest first, and the longest org ID it lists
# one under (a federated ID of seven tenants at Cortex's 150 characters fits).
PUBLISHED_LEAVES = 1000
PUBLISHED_ORG_ID_CHARS = 1024
# Ends an org ID a summary shortened. Not a character Cortex allows in one,
# so a shortened ID can never name another tenant.
SHORTENED_MARK = "\u2026"


class MalformedSummary(ValueError):
    """A peer's summary is not in the format this replica understands."""


def replica_id() -> str:
    """This process's replica ID: REPLICA_ID, else host name and PID (unique per process)."""
    return os.environ.get("REPLICA_ID") or f"{socket.gethostname()}-{os.getpid()}"


# -- the summary format (pure) -------------------------------------------------


def _age(now: float, at: float | None) -> float | None:
    return None if at is None else round(max(0.0, now - at), 3)


def _shown_id(tenant_id: str | None) -> str | None:
    """An org ID as a summary shows a running request's or a reservation's:
    whole up to `PUBLISHED_ORG_ID_CHARS`, else cut there and marked."""
    if tenant_id is None or len(tenant_id) <= PUBLISHED_ORG_ID_CHARS:
        return tenant_id
    return tenant_id[:PUBLISHED_ORG_ID_CHARS] + SHORTENED_MARK


def _worker_row(worker: WorkerSnapshot, now: float) -> list[Any]:
    return [
        worker.worker_id,
        worker.request_id,
        _shown_id(worker.tenant_id),
        worker.component,
        worker.priority,
        _age(now, worker.since),
        worker.waiting,
    ]


def _querier_row(querier: QuerierSnapshot, now: float) -> list[Any]:
    return [
        querier.querier_id,
        querier.connected,
        querier.shutting_down,
        querier.reserved_idle,
        _age(now, querier.disconnected_at),
        [[_shown_id(r.tenant_id), r.priority] for r in querier.reservations],
        [_worker_row(w, now) for w in querier.workers],
    ]


def summarize(
    snapshot: QueueSnapshot,
    *,
    replica: str,
    wall_time: float,
    stats: Mapping[str, Any] | None,
    frontends: Sequence[FrontendRow] | None = None,
) -> dict[str, Any]:
    """The compact, JSON-ready summary of one replica's queue.

    Only non-empty leaves travel: a replica that knows 10,000 idle tenants
    publishes nothing for them (their config is the same on every replica).
    `frontends` (omitted when None) is `[total, outstanding, top rows]`.
    """
    now = snapshot.taken_at
    queued = [leaf for leaf in snapshot.leaves if leaf.length > 0]
    listed = [leaf for leaf in queued if len(leaf.tenant_id) <= PUBLISHED_ORG_ID_CHARS]
    if len(listed) > PUBLISHED_LEAVES:
        listed.sort(key=lambda leaf: (-leaf.length, leaf.oldest_enqueued_at))
        del listed[PUBLISHED_LEAVES:]
    leaves = [
        [
            leaf.tenant_id,
            leaf.component,
            leaf.length,
            [x for pair in leaf.by_priority for x in pair],
            _age(now, leaf.oldest_enqueued_at),
        ]
        for leaf in listed
    ]
    summary: dict[str, Any] = {
        "v": FORMAT_VERSION,
        "id": replica,
        "at": round(wall_time, 3),
        "total": snapshot.total,
        "leaves": leaves,
        "queriers": [_querier_row(q, now) for q in snapshot.queriers],
        "stats": _published_stats(stats),
    }
    if len(listed) < len(queued):
        cut_requests = sum(leaf.length for leaf in queued) - sum(leaf.length for leaf in listed)
        summary["cut"] = [len(queued) - len(listed), cut_requests]
    if frontends is not None:
        summary["frontends"] = frontends_block(frontends)
    return summary


def _published_stats(stats: Mapping[str, Any] | None) -> dict[str, Any]:
    """The stats block as published: its usage rows under org IDs of at most
    `PUBLISHED_ORG_ID_CHARS` (50 rows of 900 KB IDs made a 45 MB summary)."""
    published = dict(stats or {})
    usage = published.get("usage")
    if isinstance(usage, Mapping):
        published["usage"] = rows_within(usage, PUBLISHED_ORG_ID_CHARS)
    return published


@dataclass(frozen=True, slots=True)
class PeerSummary:
    """A peer's summary as read: ages are relative to its wall time `at`."""

    replica: str
    at: float
    total: int
    leaves: tuple[tuple[str, str, int, tuple[tuple[int, int], ...], float], ...]
    queriers: tuple[tuple[Any, ...], ...]
    stats: Mapping[str, Any]
    # None when the peer publishes no frontends (an older replica).
    frontends: ReplicaFrontends | None = None
    # Queues and requests left out of `leaves` (`summarize`); counted in `total`.
    cut: tuple[int, int] = (0, 0)

    @classmethod
    def parse(cls, raw: Any) -> PeerSummary:
        """Validate and freeze a decoded summary; MalformedSummary if it is not one."""
        if not isinstance(raw, dict) or raw.get("v") != FORMAT_VERSION:
            raise MalformedSummary("not a version-1 replica summary")
        try:
            leaves = tuple(
                (str(t), str(c), int(n), _pairs(flat), float(age))
                for t, c, n, flat, age in raw["leaves"]
            )
            queriers = tuple(tuple(q) for q in raw["queriers"])
            for q in queriers:
                _check_querier(q)
            stats = raw.get("stats") or {}
            if not isinstance(stats, dict):
                raise TypeError("stats must be an object")
            replica = str(raw["id"])
            frontends = parse_frontends_block(replica, raw.get("frontends"))
            cut_queues, cut_requests = raw.get("cut") or (0, 0)
            return cls(
                replica,
                float(raw["at"]),
                int(raw["total"]),
                leaves,
                queriers,
                stats,
                frontends,
                (int(cut_queues), int(cut_requests)),
            )
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            # OverflowError: int() of an infinity, which json.loads reads from "Infinity".
            raise MalformedSummary(f"bad replica summary: {exc}") from exc


def _pairs(flat: Sequence[int]) -> tuple[tuple[int, int], ...]:
    return tuple((int(flat[i]), int(flat[i + 1])) for i in range(0, len(flat) - 1, 2))


def _check_querier(row: tuple[Any, ...]) -> None:
    querier_id, _connected, _shutting, _idle, gone, reservations, workers = row
    if not isinstance(querier_id, str) or not isinstance(workers, list):
        raise TypeError("querier rows are [id, ..., workers]")
    # Ages are subtracted from the reader's clock when merged: a text or null
    # one raised there, in every view, rather than here, in passing.
    if gone is not None and not _is_number(gone):
        raise TypeError("a querier's disconnected age is a number or null")
    for reservation in reservations:
        str(reservation[0]), int(reservation[1])
    for worker in workers:
        if len(worker) != 7:
            raise ValueError("worker rows have 7 fields")
        if not _is_number(worker[5]):
            raise TypeError("a worker's age is a number")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# -- merging (pure) ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MergedView:
    """The whole service's queue as this replica sees it.

    `querier_replicas[i]` names the replica that `snapshot.queriers[i]` is
    connected to: a querier connects to every replica, so it appears once
    per replica, each row with that replica's workers. `peer_frontends` are
    the peers that published frontends (ages rebased to now), sorted by
    replica; `frontends_missing` the live peers that did not. `missing` are
    the peers left out because this replica cannot read them (down, or
    Redis unreachable): the view is partial and must say so.
    """

    snapshot: QueueSnapshot
    querier_replicas: tuple[str, ...]
    replicas: tuple[str, ...]
    peers_max_age: float
    local: str = ""
    peer_frontends: tuple[ReplicaFrontends, ...] = ()
    frontends_missing: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    # Requests peers count in their totals but list under no queue (`PeerSummary.cut`).
    unlisted: int = 0

    def header(self) -> dict[str, Any]:
        """The replica figures the inspector and the REST API show.

        The note does not repeat `missing`: the inspector names those
        itself ("not answering: ..."), from the same board. With no peer
        answering it is empty: `missing` says who is not.
        """
        count = len(self.replicas)
        age = round(self.peers_max_age, 1)
        note = f"{count} replicas, peers' data ≤{max(age, 1.0):g} s old" if count > 1 else ""
        header: dict[str, Any] = {
            "count": count,
            "ids": list(self.replicas),
            "missing": list(self.missing),
            "peers_max_age": age,
            "note": note,
        }
        if self.unlisted:
            header["unlisted_requests"] = self.unlisted
            header["note"] += (
                f"; {self.unlisted} of peers' queued requests in no queue listed (a peer lists"
                f" its {PUBLISHED_LEAVES} longest queues, under org IDs of at most"
                f" {PUBLISHED_ORG_ID_CHARS} characters)"
            )
        return header


def _rebased(offset: float, age: float | None, now: float) -> float | None:
    """A peer's age (at its publication) as a reading of the local queue clock."""
    return None if age is None else now - age - offset


def _peer_queriers(peer: PeerSummary, now: float, offset: float) -> list[QuerierSnapshot]:
    out: list[QuerierSnapshot] = []
    for querier_id, connected, shutting, idle, gone, reservations, workers in peer.queriers:
        out.append(
            QuerierSnapshot(
                querier_id=querier_id,
                workers=tuple(
                    WorkerSnapshot(
                        querier_id, wid, rid, tenant, comp, prio, now - float(age) - offset, waiting
                    )
                    for wid, rid, tenant, comp, prio, age, waiting in workers
                ),
                shutting_down=bool(shutting),
                connected=bool(connected),
                disconnected_at=_rebased(offset, gone, now),
                reservations=tuple(
                    Reservation(str(t), int(p), querier_id) for t, p in reservations
                ),
                reserved_idle=bool(idle),
            )
        )
    return out


def _merge_leaves(
    local: Iterable[LeafSnapshot], peers: Sequence[PeerSummary], now: float, wall_now: float
) -> dict[tuple[str, str], LeafSnapshot]:
    merged: dict[tuple[str, str], LeafSnapshot] = {(x.tenant_id, x.component): x for x in local}
    for peer in peers:
        offset = max(0.0, wall_now - peer.at)
        for tenant, component, length, by_priority, age in peer.leaves:
            oldest = now - age - offset
            mine = merged.get((tenant, component))
            if mine is None or mine.length == 0:
                merged[(tenant, component)] = LeafSnapshot(
                    tenant, component, length, by_priority, oldest
                )
                continue
            counts = dict(mine.by_priority)
            for priority, count in by_priority:
                counts[priority] = counts.get(priority, 0) + count
            merged[(tenant, component)] = LeafSnapshot(
                tenant,
                component,
                mine.length + length,
                tuple(sorted(counts.items(), reverse=True)),
                min(mine.oldest_enqueued_at, oldest),
                # Summaries carry no actor sub-queues: this replica's alone.
                mine.actors,
            )
    return merged


def merge(
    local: QueueSnapshot, local_id: str, peers: Sequence[PeerSummary], wall_now: float
) -> MergedView:
    """Local snapshot plus peers' summaries: leaves summed, queriers listed per replica.

    Tenants' settings come from the local snapshot (every replica applies
    the same config); only their queued lengths are summed.
    """
    now = local.taken_at
    leaves = _merge_leaves(local.leaves, peers, now, wall_now)
    per_tenant: dict[str, int] = {}
    for leaf in leaves.values():
        per_tenant[leaf.tenant_id] = per_tenant.get(leaf.tenant_id, 0) + leaf.length
    tenants = tuple(t._replace(length=per_tenant.get(t.tenant_id, t.length)) for t in local.tenants)
    queriers: list[QuerierSnapshot] = list(local.queriers)
    owners: list[str] = [local_id] * len(local.queriers)
    for peer in peers:
        peer_queriers = _peer_queriers(peer, now, max(0.0, wall_now - peer.at))
        queriers += peer_queriers
        owners += [peer.replica] * len(peer_queriers)
    snapshot = QueueSnapshot(
        taken_at=now,
        layout=local.layout,
        component_selection=local.component_selection,
        total=local.total + sum(p.total for p in peers),
        leaves=tuple(leaves.values()),
        tenants=_with_queued_peers(tenants, per_tenant),
        queriers=tuple(queriers),
    )
    ages = [max(0.0, wall_now - p.at) for p in peers]
    ids = tuple(sorted([local_id, *(p.replica for p in peers)]))
    published = {
        p.replica: None if p.frontends is None else p.frontends.aged(max(0.0, wall_now - p.at))
        for p in peers
    }
    return MergedView(
        snapshot,
        tuple(owners),
        ids,
        max(ages, default=0.0),
        local_id,
        tuple(f for _, f in sorted(published.items()) if f is not None),
        tuple(sorted(r for r, f in published.items() if f is None)),
        unlisted=sum(p.cut[1] for p in peers),
    )


def _with_queued_peers(
    tenants: tuple[TenantSnapshot, ...], per_tenant: Mapping[str, int]
) -> tuple[TenantSnapshot, ...]:
    """Tenants queued only on peers get a row too, so totals add up per tenant."""
    known = {t.tenant_id for t in tenants}
    extra = tuple(
        TenantSnapshot(tid, n, 0, None, (), False)
        for tid, n in sorted(per_tenant.items())
        if tid not in known and n > 0
    )
    return tenants + extra
