"""Org IDs as Cortex reads `X-Scope-OrgID`: one tenant, or several joined by "|".

With tenant federation a Cortex frontend sends `a|b`, and the request
queues under that whole ID (its own queue, as in Cortex's scheduler), with
limits derived from each tenant's (`combined_limits`), kept only while
that queue has work. Both doors check an org ID here, so they refuse the
same ones in the same words (Cortex's `tenant.TenantIDs` /
`ValidTenantID`), and give it the same limits.

Imports only `bounds` and `model`.
"""

from __future__ import annotations

import re
from typing import Protocol

from scheduler_core.bounds import MAX_TENANT_ID_LENGTH, TENANT_ID_CHARACTER, tenant_id_unsupported
from scheduler_core.model import QueryPriority, QueryRejection, TenantLimits

__all__ = [
    "LimitsReader",
    "LimitsTable",
    "combined_limits",
    "federated_tenants_error",
    "keep_org_limits",
    "normalized_org_id",
    "org_id_error",
    "org_limits",
]

# Not "." or "..", which current Cortex and Mimir refuse (path traversal) and the store does.
_TENANT = rf"(?!\.\.?(?:\||\Z)){TENANT_ID_CHARACTER}{{1,{MAX_TENANT_ID_LENGTH}}}"
# Every org ID Cortex accepts, and only those (the walk below says why not).
_VALID = re.compile(rf"{_TENANT}(?:\|{_TENANT})*")


class LimitsReader(Protocol):
    """Where per-tenant limits are read (the runtime, the queue)."""

    def tenant_limits(self, tenant_id: str) -> TenantLimits: ...


class LimitsTable(LimitsReader, Protocol):
    """Where per-tenant limits are kept (the queue)."""

    def set_tenant_limits(self, tenant_id: str, limits: TenantLimits) -> None: ...


def org_id_error(org_id: str) -> str | None:
    """Why Cortex would refuse `org_id`, in its words; None when every tenant in it is valid.

    The first bad tenant is named, and of it the first character Cortex
    refuses; a valid ID costs one regex match.
    """
    if _VALID.fullmatch(org_id):
        return None
    if not org_id:
        return "no org id"
    for tenant in org_id.split("|"):
        if not tenant:
            return f"tenant ID is empty in {org_id!r}"
        bad = tenant_id_unsupported(tenant)
        if bad:
            first = next(c for c in tenant if c in bad)
            return f"tenant ID {tenant!r} contains unsupported character {first!r}"
        if len(tenant) > MAX_TENANT_ID_LENGTH:
            return f"tenant ID is too long: max {MAX_TENANT_ID_LENGTH} characters"
        if tenant in (".", ".."):
            return "tenant ID is '.' or '..'"
    return None


def normalized_org_id(org_id: str) -> str:
    """The org ID as Cortex's and Mimir's `tenant.TenantIDs` read it: sorted, each tenant once.

    Queued under its raw text, `a`, `a|a`, `a|a|a` ... were as many queues
    of one tenant, each with its own outstanding limit and its own turn in
    the round robin; and `a|b` and `b|a` two queues of one federation. A
    Cortex frontend sends the normalised ID already (it calls
    `tenant.TenantID`); any other client now gets the same queue.
    """
    if "|" not in org_id:
        return org_id
    return "|".join(sorted(set(org_id.split("|"))))


def federated_tenants_error(org_id: str, max_tenants: int) -> str | None:
    """Why `org_id` names more tenants than `max_tenants` allows (0: no limit), or None.

    Checked before the ID's tenants are read one by one: a 1 MB org ID of
    140,000 tenants held the loop about 100 ms in limits and queue work, and
    counting its separators takes well under a millisecond.
    """
    if not max_tenants or "|" not in org_id or org_id.count("|") < max_tenants:
        return None
    # A tenant named twice counts once, as Mimir counts after `tenant.TenantIDs`
    # normalised the ID: `a|a|a` is one tenant, not three over a limit of 2.
    count = len(set(org_id.split("|")))
    if count <= max_tenants:
        return None
    return f"the org ID names {count} tenants; at most {max_tenants} may be federated"


def combined_limits(parts: list[TenantLimits]) -> TenantLimits:
    """Limits of a multi-tenant id `a|b`, derived from its tenants' limits.

    As in Mimir, the shard is the smallest positive `max_queriers` of the
    tenants (0 if none limits it), and likewise the smallest positive
    `max_query_capacity`. The outstanding limit is the smallest one
    any tenant sets. Priority rules are those of the first tenant (in the
    order given: ID order for a normalised ID) that has priority enabled:
    rule sets cannot be merged without changing what each rule means.
    """
    shards = [p.max_queriers for p in parts if p.max_queriers > 0]
    capacities = [p.max_query_capacity for p in parts if p.max_query_capacity > 0]
    outstanding = [p.max_outstanding for p in parts if p.max_outstanding is not None]
    priority = next((p.query_priority for p in parts if p.query_priority.enabled), None)
    # Every tenant's rejection rules apply: federating must not bypass one.
    rejection = QueryRejection(
        any(p.query_rejection.enabled for p in parts),
        [a for p in parts if p.query_rejection.enabled for a in p.query_rejection.query_attributes],
    )
    return TenantLimits(
        query_rejection=rejection,
        max_queriers=min(shards, default=0),
        max_outstanding=min(outstanding) if outstanding else None,
        query_priority=priority if priority is not None else QueryPriority(),
        max_query_capacity=min(capacities, default=0.0),
    )


# The last federated ID combined: (ID, its tenants' limits, their combination).
# A federated enqueue asks twice, admission then the queue (`keep_org_limits`),
# with nothing in between; the second is answered from here while each
# tenant's limits are the very objects combined (a config edit replaces
# them), so the result is always what `combined_limits` would give. One
# entry: distinct IDs cannot pile up.
_last: tuple[str, tuple[TenantLimits, ...], TenantLimits] | None = None


def org_limits(table: LimitsReader, org_id: str) -> TenantLimits:
    """The limits a request of `org_id` (already checked) runs under.

    A federated ID's are its tenants' combined limits, derived from its
    tenants' current limits on every call, so an edit of any one tenant
    applies to the very next request. Nothing is stored in `table`:
    admission and explain only read.
    """
    global _last
    if "|" not in org_id:
        return table.tenant_limits(org_id)
    parts = tuple(table.tenant_limits(t) for t in org_id.split("|"))
    last = _last
    if (
        last is not None
        and last[0] == org_id
        and all(now is then for now, then in zip(parts, last[1], strict=True))
    ):
        return last[2]
    combined = combined_limits(list(parts))
    _last = (org_id, parts, combined)
    return combined


def keep_org_limits(table: LimitsTable, org_id: str) -> None:
    """Store a federated ID's combined limits under the whole ID, if they changed.

    The queue calls this as it queues a request of `a|b`, so the ID's queue
    is sharded and bounded by them; it drops them again when that queue
    has nothing queued or running (as Cortex drops an empty queue), so
    distinct federated IDs cannot pile up limits, shards and reservations.
    """
    wanted = org_limits(table, org_id)
    current = table.tenant_limits(org_id)
    # The same object when stored by the last enqueue: no field-by-field compare.
    if current is not wanted and current != wanted:
        table.set_tenant_limits(org_id, wanted)
