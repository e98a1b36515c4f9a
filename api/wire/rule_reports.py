"""Rule hit counts and the traffic sample, read for views, and their report shapes.

The admission log lives on the scheduler's loop and is mutated there on every
request, so views (which run in worker threads) read it through
`async_to_sync`, which runs the read on that loop: a copy is taken between
two requests, never while one is being counted. Without a running scheduler
in this process (a management command, a test without Daphne) there is
nothing to read, and the readers say so with None or empty results.

`rule_stats_body` builds the REST shape of `GET tenants/<id>/rule-stats/`
from this replica's counts and the peers' (`api.cluster.replica_rules`),
counting only records made under the tenant's current config (same
fingerprint), so a replica that has not applied the latest version yet does
not mix old rules' counts in. The counts of federated IDs naming the
tenant (`a|b` for `a`), current under their combined limits, are folded
into its rules' (`scheduler_core.rule_stats.member_share`) and listed by ID.

The sample, and so a dry run or a `recent` simulation, is this replica's
alone, while rule-stats sums every replica's counts it could read:
`sample_scope` and `counts_scope` say which replicas each answer covers, so
part of the service's traffic is never passed off as all of it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings

from api.cluster import replica_rules
from api.cluster.replica_board import get_board
from api.cluster.replica_rules import PeerCounts, ReplicaCounts, peer_counts
from api.wire import runtime_host
from api.wire.queue_peers import peers_unheard
from scheduler_core.federation import combined_limits
from scheduler_core.model import TenantLimits
from scheduler_core.rule_stats import (
    WINDOWS,
    RuleCounts,
    limits_fingerprint,
    member_share,
    naming,
    slot_layout,
)
from scheduler_core.traffic import SampledRequest

__all__ = [
    "WINDOW_NAMES",
    "ReplicaCounts",
    "COUNTS_UNREAD_NOTE",
    "SAMPLE_UNHEARD_NOTE",
    "connected_queriers",
    "counts_scope",
    "federated_counts",
    "federated_counts_many",
    "federated_sample_rows",
    "local_counts",
    "local_counts_many",
    "rule_stats_body",
    "sample_rows",
    "sample_scope",
]

WINDOW_NAMES: tuple[str, ...] = (*(name for name, _ in WINDOWS), "version")

SAMPLE_UNHEARD_NOTE = (
    "peer replicas unknown (Redis not read yet, this replica just started, or unreachable "
    "since): this replica's traffic only, and peers may hold more"
)
COUNTS_UNREAD_NOTE = (
    "the peer replicas' counts could not be read (Redis not read since this replica "
    "started, or unreachable since): this replica's counts only"
)


def sample_scope(wall_now: float | None = None) -> dict[str, Any]:
    """Whose traffic a dry run or a `recent` simulation replays: this replica's only.

    `other_replicas` names the peers whose traffic is not in it, so an
    answer on a scaled-out service says it covers part of the traffic.
    """
    board = get_board()
    # Read before the peers are named: after, a registry read landing
    # between the two left neither a peer nor the note.
    unheard = peers_unheard()
    body: dict[str, Any] = {"replica": board.own_id, "other_replicas": board.known_peers(wall_now)}
    if unheard:
        # No peer to name yet, but peers may hold traffic: not a lone replica's.
        body["replicas_note"] = SAMPLE_UNHEARD_NOTE
    return body


def counts_scope(wall_now: float | None = None, peers: PeerCounts | None = None) -> dict[str, Any]:
    """rule-stats' `replicas_missing`: known peers whose counts are not in the sums.

    A peer hung or killed (its counts stale past `replica_rules.STALE_SECONDS`),
    one whose counts were not read yet, and every known peer while Redis is
    unreachable: their requests are missing from the totals, which must
    not read as the whole service's. With peers (Redis) but their counts
    unread, `replicas_note` says so, even when no peer is known to name.
    `peers` is the read the answer's sums came from (`PeerCounts`).
    """
    now = time.time() if wall_now is None else wall_now
    read_at = (peers if peers is not None else peer_counts()).at
    counted = {
        replica
        for replica, at in (read_at or {}).items()
        if now - at <= replica_rules.STALE_SECONDS
    }
    known = get_board().known_peers(now)
    body: dict[str, Any] = {"replicas_missing": [r for r in known if r not in counted]}
    if settings.REDIS_URL and read_at is None:
        body["replicas_note"] = COUNTS_UNREAD_NOTE
    return body


async def _on_loop_counts(tenant_ids: list[str]) -> dict[str, RuleCounts]:
    if not runtime_host.started():
        return {}
    stats = runtime_host.get_host().admission_log.stats
    found = {t: stats.counts(t) for t in tenant_ids}
    return {t: c for t, c in found.items() if c is not None}


def local_counts_many(tenant_ids: Iterable[str]) -> dict[str, RuleCounts]:
    """This replica's counts of each tenant that had requests under its current limits."""
    if not runtime_host.started():
        return {}
    return async_to_sync(_on_loop_counts)(list(tenant_ids))


def local_counts(tenant_id: str) -> RuleCounts | None:
    return local_counts_many([tenant_id]).get(tenant_id)


async def _on_loop_entries(tenant_ids: list[str] | None) -> dict[str, list[SampledRequest]]:
    # Only list copies on the loop (C speed, even for 1,000 x 1,000): turning
    # them into rows happens in the caller's thread, off the loop.
    if not runtime_host.started():
        return {}
    traffic = runtime_host.get_host().admission_log.traffic
    wanted = traffic.tenants() if tenant_ids is None else tenant_ids
    return {t: entries for t in wanted if (entries := traffic.requests(t))}


def sample_rows(tenant_ids: Iterable[str] | None = None) -> dict[str, list[tuple[Any, ...]]]:
    """Sampled requests as plain rows per tenant (every sampled tenant if None)."""
    if not runtime_host.started():
        return {}
    entries = async_to_sync(_on_loop_entries)(None if tenant_ids is None else list(tenant_ids))
    return {t: [e.to_row() for e in sample] for t, sample in entries.items()}


async def _on_loop_federated_entries(tenant_id: str) -> dict[str, list[SampledRequest]]:
    if not runtime_host.started():
        return {}
    traffic = runtime_host.get_host().admission_log.traffic
    return await _on_loop_entries(naming(tenant_id, traffic.tenants()))


def federated_sample_rows(tenant_id: str) -> dict[str, list[tuple[Any, ...]]]:
    """Sampled rows of each federated org ID naming the tenant (`a|b` for `a`).

    Sampled under the whole ID, as admission judged them (combined limits).
    """
    if not runtime_host.started():
        return {}
    entries = async_to_sync(_on_loop_federated_entries)(tenant_id)
    return {t: [e.to_row() for e in sample] for t, sample in entries.items()}


async def _on_loop_federated_counts(tenant_ids: list[str]) -> dict[str, RuleCounts]:
    if not runtime_host.started():
        return {}
    wanted = set(tenant_ids)
    # One pass over the counted IDs, whatever the number of tenants asked about.
    ids = [
        org_id
        for org_id in runtime_host.get_host().admission_log.stats.tenants()
        if "|" in org_id and not wanted.isdisjoint(org_id.split("|"))
    ]
    return await _on_loop_counts(ids)


def federated_counts(
    tenant_id: str, peers: PeerCounts | None = None
) -> dict[str, list[ReplicaCounts]]:
    """org ID -> every replica's counts of it, for the federated IDs naming the tenant.

    Counted under the whole ID (admission's few increments per request stay
    as they are); a tenant's rule-stats fold them in when read.
    """
    return federated_counts_many([tenant_id], peers)[tenant_id]


def federated_counts_many(
    tenant_ids: Iterable[str], peers: PeerCounts | None = None
) -> dict[str, dict[str, list[ReplicaCounts]]]:
    """`federated_counts` of each tenant, read from the loop once (the tenants list's page)."""
    wanted = list(tenant_ids)
    read = peers if peers is not None else peer_counts()
    local = async_to_sync(_on_loop_federated_counts)(wanted) if runtime_host.started() else {}
    theirs = {org_id for tenants in (read.tenants or {}).values() for org_id in tenants}
    counted = set(local) | theirs
    found: dict[str, dict[str, list[ReplicaCounts]]] = {}
    for tenant_id in wanted:
        mine = found[tenant_id] = {}
        for org_id in naming(tenant_id, counted):
            counts = replica_rules.tenant_counts(org_id, local.get(org_id), peers=read)
            if counts:
                mine[org_id] = counts
    return found


async def _on_loop_queriers() -> list[str]:
    if not runtime_host.started():
        return []
    # As the shards see them, read from the queue's own record (a snapshot
    # of every tenant is not needed for a list of ids): queriers kept by
    # querier_forget_delay included, and shutting-down ones, which stay in
    # the shards until their last worker goes (leaving them out named other
    # queriers than the queue's).
    return sorted(runtime_host.get_runtime().queue.listing().queriers)


def connected_queriers() -> list[str]:
    """Queriers this replica's shards are drawn from now."""
    if not runtime_host.started():
        return []
    return async_to_sync(_on_loop_queriers)()


def _window_sums(parts: Sequence[dict[str, list[int]]], size: int) -> dict[str, list[int]]:
    summed = {name: [0] * size for name in WINDOW_NAMES}
    for windows in parts:
        for name in WINDOW_NAMES:
            counts = windows.get(name) or []
            for slot in range(min(size, len(counts))):
                summed[name][slot] += counts[slot]
    return summed


def _at(windows: dict[str, list[int]], slot: int) -> dict[str, int]:
    return {name: windows[name][slot] for name in WINDOW_NAMES}


def _federated_rows(
    federated: Mapping[str, Sequence[ReplicaCounts]],
    parts: Mapping[str, TenantLimits],
    tenant_id: str,
    total: dict[str, list[int]],
) -> tuple[list[dict[str, Any]], list[float]]:
    """Fold each federated ID's current counts into `total`; its rows, and the ages counted."""
    rows, ages = [], []
    for org_id, replicas in federated.items():
        combined = combined_limits([parts[t] for t in org_id.split("|")])
        fingerprint = limits_fingerprint(combined)
        current = [r for r in replicas if r.fingerprint == fingerprint]
        if not current:
            continue
        counts = _window_sums([r.windows for r in current], slot_layout(combined)[0])
        share = member_share(org_id, tenant_id, parts)
        for name, mine in share.fold(counts, len(total[WINDOW_NAMES[0]])).items():
            if name in total:
                total[name] = [a + b for a, b in zip(total[name], mine, strict=True)]
        rows.append(
            {"org_id": org_id, "total": _at(counts, 0), "priority_rules_of": share.priority_from}
        )
        ages += [r.age for r in current if r.age is not None]
    return rows, ages


def rule_stats_body(
    tenant_id: str,
    version: int | None,
    limits: TenantLimits,
    replicas: Sequence[ReplicaCounts],
    federated: Mapping[str, Sequence[ReplicaCounts]] | None = None,
    parts: Mapping[str, TenantLimits] | None = None,
) -> dict[str, Any]:
    """The REST shape, summed over the replicas counting under `limits`.

    `federated`: every replica's counts of each federated ID naming the
    tenant (`federated_counts`), with `parts` the current limits of every
    tenant those IDs name. Those counted under the ID's combined limits as
    they stand now are folded in: into `total`, into each of this tenant's
    rules and rejection attributes they matched, and one `federated` row
    per ID, so its requests are not taken for the tenant's own.
    """
    fingerprint = limits_fingerprint(limits)
    size, starts = slot_layout(limits)
    current = [r for r in replicas if r.fingerprint == fingerprint]
    total = _window_sums([r.windows for r in current], size)
    federated_rows, federated_ages = _federated_rows(
        federated or {}, {**(parts or {}), tenant_id: limits}, tenant_id, total
    )
    ages = [r.age for r in current if r.age is not None] + federated_ages
    priorities = []
    for rule, pdef in enumerate(limits.query_priority.priorities):
        attributes = [
            {"index": j, "matched": _at(total, starts[rule] + j)}
            for j in range(len(pdef.query_attributes))
        ]
        matched = {name: sum(a["matched"][name] for a in attributes) for name in WINDOW_NAMES}
        priorities.append(
            {"index": rule, "priority": pdef.priority, "matched": matched, "attributes": attributes}
        )
    rejection = [
        {"index": k, "rejected": _at(total, 2 + k)}
        for k in range(len(limits.query_rejection.query_attributes))
    ]
    return {
        "tenant": tenant_id,
        "version": version,
        "priorities": priorities,
        "default": {"matched": _at(total, 1)},
        "rejection": rejection,
        "total": _at(total, 0),
        # The longest any replica has counted under this config: the 1h
        # window covers less than an hour until this reaches 3600.
        "counting_seconds": max(ages, default=None),
        "replicas": [
            {
                "replica": r.replica,
                "current": r.fingerprint == fingerprint,
                # Each replica's own span: one restarted counts from its
                # start, so its share covers less than the version's life.
                "counting_seconds": r.age,
                "total": {name: (r.windows.get(name) or [0])[0] for name in WINDOW_NAMES},
            }
            for r in replicas
        ],
        "federated": federated_rows,
    }
