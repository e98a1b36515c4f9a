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
from itertools import compress, count
from operator import is_
from typing import Protocol

from scheduler_core.bounds import (
    MAX_TENANT_ID_LENGTH,
    TENANT_ID_CHARACTER,
    quoted,
    tenant_id_unsupported,
)
from scheduler_core.model import QueryPriority, QueryRejection, TenantLimits

__all__ = [
    "MAX_ORG_ID_LENGTH",
    "LimitsReader",
    "LimitsTable",
    "combined_limits",
    "federated_tenants_error",
    "keep_org_limits",
    "normalized_org_id",
    "org_id_error",
    "org_id_length_error",
    "org_limits",
]

# The longest org ID either door reads. Go's net/http reads at most
# `http.DefaultMaxHeaderBytes` (1 MiB) of request headers plus 4096 bytes of
# "bufio slop" (`initialReadLimitSize`), request line included, and Cortex
# v1.15.3's HTTP server (weaveworks/common `server.go`) never sets
# `MaxHeaderBytes` (over HTTP/2 the bound is lower: 1 MiB + 320). So no
# `X-Scope-OrgID` a Cortex query-frontend accepted, and forwards as `userID`,
# is longer than this many bytes, hence characters: nothing a real Cortex
# sends is refused. The gRPC door's 16 MiB message limit is no bound: an
# 8 MB ID of 1M tenants held the event loop 8 s. At this length an ID names
# at most ~262,000 distinct tenants (3 characters and a "|" each).
MAX_ORG_ID_LENGTH = (1 << 20) + 4096

# Not "." or "..", which current Cortex and Mimir refuse (path traversal) and the store does.
_TENANT = re.compile(rf"(?!\.\.?\Z){TENANT_ID_CHARACTER}{{1,{MAX_TENANT_ID_LENGTH}}}")
# A character no tenant may hold, "|" aside: one C-speed scan of a whole ID.
_UNSUPPORTED = re.compile(f"[^|{TENANT_ID_CHARACTER[1:]}")


class LimitsReader(Protocol):
    """Where per-tenant limits are read (the runtime, the queue)."""

    def tenant_limits(self, tenant_id: str) -> TenantLimits: ...


class LimitsTable(LimitsReader, Protocol):
    """Where per-tenant limits are kept (the queue)."""

    def set_tenant_limits(self, tenant_id: str, limits: TenantLimits) -> None: ...


def org_id_length_error(org_id: str, field: str = "org ID") -> str | None:
    """Why `org_id` is too long to read (`MAX_ORG_ID_LENGTH`), naming `field`; else None.

    Asked before anything reads the ID's tenants: its length is all it costs.
    """
    if len(org_id) <= MAX_ORG_ID_LENGTH:
        return None
    return (
        f"{field} is {len(org_id)} characters long; at most {MAX_ORG_ID_LENGTH} may be "
        "sent, the longest X-Scope-OrgID a Cortex query-frontend can forward"
    )


def org_id_error(org_id: str) -> str | None:
    """Why Cortex would refuse `org_id`, in its words; None when every tenant in it is valid.

    The first bad tenant is named, and of it the first character Cortex
    refuses. One tenant costs one regex match; a federated ID a few scans at
    C speed, never a Python step per tenant: it may name 262,000 of them.
    An ID over `MAX_ORG_ID_LENGTH` is refused unread.
    """
    if not org_id:
        return "no org id"
    if (too_long := org_id_length_error(org_id)) is not None:
        return too_long
    if "|" not in org_id:
        return None if _TENANT.fullmatch(org_id) else _tenant_error(org_id)
    tenants = org_id.split("|")
    first = _first_refused(org_id, tenants)
    if first is None:
        return None
    tenant = tenants[first]
    if not tenant:
        return f"tenant ID is empty in {quoted(org_id)}"
    return _tenant_error(tenant)


def _tenant_error(tenant: str) -> str | None:
    """Why Cortex refuses this one (non-empty) tenant, in its words; None if it does not."""
    bad = tenant_id_unsupported(tenant)
    if bad:
        first = next(c for c in tenant if c in bad)
        return f"tenant ID {quoted(tenant)} contains unsupported character {first!r}"
    if len(tenant) > MAX_TENANT_ID_LENGTH:
        return f"tenant ID is too long: max {MAX_TENANT_ID_LENGTH} characters"
    if tenant in (".", ".."):
        return "tenant ID is '.' or '..'"
    return None


def _first_refused(org_id: str, tenants: list[str]) -> int | None:
    """The index of the first tenant of `org_id` Cortex refuses, or None.

    Each kind of fault is found by its own scan of the whole text or list,
    and the earliest wins: the same tenant a walk would stop at.
    """
    found: list[int] = []
    bad = _UNSUPPORTED.search(org_id)
    if bad is not None:
        found.append(org_id.count("|", 0, bad.start()))
    wrapped = f"|{org_id}|"
    for needle in ("||", "|.|", "|..|"):  # an empty tenant, ".", ".."
        at = wrapped.find(needle)
        if at >= 0:
            found.append(wrapped.count("|", 0, at))  # the "|"s before it: its index
    if max(map(len, tenants)) > MAX_TENANT_ID_LENGTH:
        too_long = map(MAX_TENANT_ID_LENGTH.__lt__, map(len, tenants))
        found.append(next(compress(count(), too_long)))
    return min(found, default=None)


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
    # Duplicates dropped first, keeping the order, so an ID already sorted (a
    # Cortex frontend's) is sorted in one pass: timsort's run detection.
    return "|".join(sorted(dict.fromkeys(org_id.split("|"))))


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
    # Each distinct object once, in first-seen order (at C speed): an ID of
    # 262,000 tenants is mostly the one defaults object, and the minimums and
    # the first enabled priority are the same read over these.
    distinct = list(dict(zip(map(id, parts), parts, strict=True)).values())
    shards = [p.max_queriers for p in distinct if p.max_queriers > 0]
    capacities = [p.max_query_capacity for p in distinct if p.max_query_capacity > 0]
    outstanding = [p.max_outstanding for p in distinct if p.max_outstanding is not None]
    priority = next((p.query_priority for p in distinct if p.query_priority.enabled), None)
    # Every tenant's rejection rules apply, in ID order, a tenant's twice if
    # it is named twice (the slot layout counts them so): federating must not
    # bypass one. Only the rejecting tenants' parts are walked in Python.
    rejecting = {id(p) for p in distinct if p.query_rejection.enabled}
    attributes = (
        [
            a
            for p in compress(parts, map(rejecting.__contains__, map(id, parts)))
            for a in p.query_rejection.query_attributes
        ]
        if rejecting
        else []
    )
    rejection = QueryRejection(bool(rejecting), attributes)
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
    # map, not a generator: no Python frame per tenant (an ID may name 262,000).
    parts = tuple(map(table.tenant_limits, org_id.split("|")))
    last = _last
    # The same ID names as many tenants: the lengths are equal.
    if last is not None and last[0] == org_id and all(map(is_, parts, last[1])):
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
