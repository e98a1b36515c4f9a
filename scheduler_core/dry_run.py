"""Replay a tenant's sampled traffic against a draft config, writing nothing.

Each sampled request (`traffic.SampledRequest.to_row`) is rebuilt at its own
arrival time, with its times restored from their offsets, and judged by the
same `rejection.judge` admission uses, once under the saved limits and once
under the draft, so a request's outcome under the draft is exactly what the
live scheduler gives it once the draft is saved. Every request lands in one
bucket: `rejected` (the draft rejects it), `unchanged` (same priority as
now), or one `changed` row (from the current priority, or "rejected", to the
draft's), so `sample == rejected + unchanged + sum(changed counts)`.
Requests of federated IDs naming the tenant (sampled under `a|b`) are
replayed too, under the ID's combined limits before and with the draft in
place of the tenant's block, and counted both in those buckets and in a
`federated` row per ID.

Pure and picklable in and out, so it runs in the niced worker process (see
`api.rest.offload`) and never on the scheduler's loop.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from scheduler_core.classify import query_info
from scheduler_core.federation import combined_limits
from scheduler_core.model import TenantLimits
from scheduler_core.queue_snapshot import reservations_of
from scheduler_core.rejection import Verdict, judge
from scheduler_core.snapshot import TenantServing
from scheduler_core.tenant_querier_assignment import (
    effective_shard_size,
    reserved_queriers,
    shuffle_shard,
)

__all__ = [
    "EXAMPLES_PER_CHANGE",
    "FederatedRows",
    "limits_of",
    "replay",
    "reservations",
    "reserved_by_priority",
    "serving_of",
    "verdict_of_row",
]

EXAMPLES_PER_CHANGE = 3
_REJECTED = "rejected"


def verdict_of_row(
    row: Sequence[Any], limits: TenantLimits, lookback_delta: float = 300.0
) -> Verdict:
    """What `limits` decide for one sampled request, at its arrival time."""
    arrived, query, api_type, start, end, step, headers, matchers = row[:8]
    info = query_info(
        query=query,
        api_type=api_type,
        start=None if start is None else arrived + start,
        end=None if end is None else arrived + end,
        step=step,
        headers=dict(headers),
        lookback_delta=lookback_delta,
        now=arrived,
        matchers=matchers,
    )
    return judge(limits, info, arrived)


def _outcome(verdict: Verdict) -> int | str:
    return _REJECTED if verdict.rejected else verdict.priority


class _Tally:
    """The buckets of one replay (see module doc)."""

    def __init__(self) -> None:
        self.sample = self.unchanged = self.rejected = 0
        self.changes: dict[tuple[int | str, int | str], list[Any]] = {}
        self.admitted: tuple[dict[int, int], dict[int, int]] = ({}, {})

    def add(self, now: int | str, draft: int | str, query: str) -> None:
        self.sample += 1
        for counts, outcome in zip(self.admitted, (now, draft), strict=True):
            if outcome != _REJECTED:
                counts[int(outcome)] = counts.get(int(outcome), 0) + 1
        if draft == _REJECTED:
            self.rejected += 1
        elif now == draft:
            self.unchanged += 1
        else:
            slot = self.changes.setdefault((now, draft), [0, []])
            slot[0] += 1
            if len(slot[1]) < EXAMPLES_PER_CHANGE and query not in slot[1]:
                slot[1].append(query)

    def report(self) -> dict[str, Any]:
        changed = [
            {"from": old, "to": new, "count": count, "examples": examples}
            for (old, new), (count, examples) in sorted(
                self.changes.items(), key=lambda item: (-item[1][0], str(item[0]))
            )
        ]
        by_priority = {
            side: {str(p): counts[p] for p in sorted(counts, reverse=True)}
            for side, counts in zip(("before", "after"), self.admitted, strict=True)
        }
        return {
            "sample": self.sample,
            "unchanged": self.unchanged,
            "changed": changed,
            "rejected": self.rejected,
            "by_priority": by_priority,
        }


# (federated org ID, its sampled rows, its limits now, its limits with the draft)
FederatedRows = tuple[str, Sequence[Sequence[Any]], TenantLimits, TenantLimits]


def replay(
    rows: Iterable[Sequence[Any]],
    before: TenantLimits,
    after: TenantLimits,
    federated: Sequence[FederatedRows] = (),
) -> dict[str, Any]:
    """The traffic part of a dry-run report: sample, unchanged, changed, rejected.

    `by_priority` counts, for the saved limits (`before`) and the draft
    (`after`), the requests each admits by the priority it gives them (as
    text): with the reservations, how many wait for the queriers left to
    the lower priorities.

    `federated`: requests of federated org IDs naming the tenant, each ID's
    judged by its own pair of (combined) limits. They count in the totals
    above, after the tenant's own (so its own queries are the first
    examples), and each ID also gets a `federated` row of its own buckets,
    so the report says which of the sample were not the tenant's own.
    """
    whole = _Tally()
    for row in rows:
        whole.add(*_outcomes(row, before, after))
    parts = []
    for org_id, org_rows, org_before, org_after in federated:
        part = _Tally()
        for row in org_rows:
            outcome = _outcomes(row, org_before, org_after)
            whole.add(*outcome)
            part.add(*outcome)
        if part.sample:
            parts.append({"org_id": org_id, **part.report()})
    return {**whole.report(), "federated": parts}


def _outcomes(
    row: Sequence[Any], before: TenantLimits, after: TenantLimits
) -> tuple[int | str, int | str, str]:
    now, draft = _outcome(verdict_of_row(row, before)), _outcome(verdict_of_row(row, after))
    return now, draft, row[1]


def serving_of(tenant_id: str, limits: TenantLimits, queriers: Sequence[str]) -> TenantServing:
    """Who would serve the tenant under `limits`, given `queriers`.

    The same shard and reservation rules the queue applies (Cortex's), so a
    draft's answer is what `RequestQueue.serving` gives once it is saved.
    """
    ordered = sorted(queriers)
    # The shard as the queue sizes it: Loki's max_query_capacity narrows it
    # too (with max_queriers alone, a capacity-limited tenant's reservations
    # were drawn from every querier, naming ones outside its shard).
    size = effective_shard_size(limits.max_queriers, limits.max_query_capacity, len(ordered))
    shard = shuffle_shard(tenant_id, ordered, size)
    qp = limits.query_priority
    reserved: dict[str, int] = {}
    if qp.enabled and any(p.reserved_queriers > 0 for p in qp.priorities):
        reserved = reserved_queriers(shard if shard is not None else ordered, qp.priorities)
    return TenantServing(tenant_id, shard, len(ordered), reservations_of(tenant_id, reserved))


def reservations(
    tenant_id: str, limits: TenantLimits, queriers: Sequence[str]
) -> dict[str, list[str]]:
    """Priority (as text) -> the queriers `limits` reserve for it, given `queriers`."""
    return reserved_by_priority(serving_of(tenant_id, limits, queriers))


def reserved_by_priority(served: TenantServing) -> dict[str, list[str]]:
    """Priority (as text) -> its reserved queriers, from a `serving_of` answer."""
    return {str(priority): ids for priority, ids in served.by_priority().items()}


def limits_of(raw: Any) -> TenantLimits:
    """Limits of a raw tenant block, or of a list of blocks: a federated ID's tenants, in ID order.

    Rebuilt here, so only plain values cross a process boundary. A block
    that no longer validates counts as the defaults, as the scheduler treats
    it; a list gives the combined limits the doors give the federated ID.
    """
    from scheduler_core.errors import ConfigInvalid
    from scheduler_core.validation import tenant_limits_from_dict

    if isinstance(raw, list):
        return combined_limits([limits_of(block) for block in raw])
    try:
        return tenant_limits_from_dict(raw)
    except ConfigInvalid:
        return TenantLimits()
