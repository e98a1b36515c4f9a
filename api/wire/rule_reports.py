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
not mix old rules' counts in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from asgiref.sync import async_to_sync

from api.cluster.replica_rules import ReplicaCounts
from api.wire import runtime_host
from scheduler_core.model import TenantLimits
from scheduler_core.rule_stats import WINDOWS, RuleCounts, limits_fingerprint, slot_layout
from scheduler_core.traffic import SampledRequest

__all__ = [
    "WINDOW_NAMES",
    "ReplicaCounts",
    "connected_queriers",
    "local_counts",
    "local_counts_many",
    "rule_stats_body",
    "sample_rows",
]

WINDOW_NAMES: tuple[str, ...] = (*(name for name, _ in WINDOWS), "version")


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


def rule_stats_body(
    tenant_id: str, version: int | None, limits: TenantLimits, replicas: Sequence[ReplicaCounts]
) -> dict[str, Any]:
    """The REST shape, summed over the replicas counting under `limits`."""
    fingerprint = limits_fingerprint(limits)
    size, starts = slot_layout(limits)
    current = [r for r in replicas if r.fingerprint == fingerprint]
    total = _window_sums([r.windows for r in current], size)
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
        "counting_seconds": max((r.age for r in current if r.age is not None), default=None),
        "replicas": [
            {
                "replica": r.replica,
                "current": r.fingerprint == fingerprint,
                "total": {name: (r.windows.get(name) or [0])[0] for name in WINDOW_NAMES},
            }
            for r in replicas
        ],
    }
