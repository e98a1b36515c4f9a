"""Which querier may serve which tenant: shards, forget delay, reservations.

Shards are a pure function of (tenant id, sorted known querier ids,
shard size): a seeded shuffle whose seed is the first 8 bytes of the
SHA-256 of the tenant id, so every process and every run agrees (Python's
`hash()` is salted per process and must never be used here). A querier whose
last worker left stays known for `querier_forget_delay` so a restart does not
reshuffle every tenant. The shard size is `effective_shard_size`: Mimir's
`max_queriers_per_tenant`, Loki's `max_query_capacity` share of the queriers,
or the smaller of the two, recomputed whenever queriers come and go.

Reservations follow Cortex, computed from the shard (or every known querier
when the tenant is not sharded) and recomputed on every change of queriers
or limits, so they never go stale.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from scheduler_core.model import PriorityDef, QueryPriority, Request
from scheduler_core.nodes import DequeueContext

__all__ = [
    "QuerierShare",
    "QuerierState",
    "Shard",
    "ShardListener",
    "TenantQuerierAssignment",
    "WorkerState",
    "effective_shard_size",
    "querier_share",
    "reserved_queriers",
    "shuffle_shard",
    "tenant_seed",
]

_MASK = (1 << 64) - 1

Shard = tuple[str, ...] | None
ShardListener = Callable[[str, Shard, Shard], None]


def tenant_seed(tenant_id: str) -> int:
    """A stable 64-bit seed for a tenant: the same in every process."""
    return int.from_bytes(hashlib.sha256(tenant_id.encode()).digest()[:8], "big")


def shuffle_shard(tenant_id: str, queriers: Sequence[str], max_queriers: int) -> Shard:
    """The tenant's queriers (sorted), or None when it may use all of them.

    `queriers` must be sorted. A partial Fisher-Yates shuffle driven by
    splitmix64 picks the first `max_queriers` of the seeded permutation.
    """
    n = len(queriers)
    if max_queriers <= 0 or max_queriers >= n:
        return None
    pool = list(queriers)
    state = tenant_seed(tenant_id)
    for i in range(max_queriers):
        state = (state + 0x9E3779B97F4A7C15) & _MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        j = i + (z ^ (z >> 31)) % (n - i)
        pool[i], pool[j] = pool[j], pool[i]
    return tuple(sorted(pool[:max_queriers]))


def _ceil_share(share: float, total: int) -> int:
    # Rounded first: 0.07 * 100 is 7.000000000000001 in floats, and a plain
    # ceiling (Loki's) gives that tenant 8 queriers of 100, not 7.
    return math.ceil(round(share * total, 9))


def effective_shard_size(max_queriers: int, max_query_capacity: float, queriers: int) -> int:
    """How many of `queriers` the tenant may use; 0 means all of them.

    Loki's rule: with both limits set, min(max_queriers,
    ceil(queriers * max_query_capacity)); either alone when only one is set;
    every querier when neither is. A capacity that rounds up to every
    querier is no cap at all.
    """
    if max_query_capacity <= 0:
        return max(max_queriers, 0)
    by_capacity = _ceil_share(min(max_query_capacity, 1.0), queriers)
    if by_capacity >= queriers:
        return max(max_queriers, 0)
    if max_queriers > 0:
        return min(max_queriers, by_capacity)
    return by_capacity


class QuerierShare(NamedTuple):
    """How many of the known queriers a tenant may use, and which limit decides."""

    may_use: int
    known: int
    decided_by: str | None  # "max_queriers_per_tenant", "max_query_capacity", or None: all

    def summary(self) -> str:
        text = f"this tenant may use {self.may_use} of {self.known} queriers"
        return text if self.decided_by is None else f"{text} ({self.decided_by})"


def querier_share(max_queriers: int, max_query_capacity: float, known: int) -> QuerierShare:
    """The explain view's answer: the effective shard against `known` queriers."""
    size = effective_shard_size(max_queriers, max_query_capacity, known)
    if size <= 0 or size >= known:
        return QuerierShare(known, known, None)
    by_capacity = max_query_capacity > 0 and (max_queriers <= 0 or size < max_queriers)
    return QuerierShare(
        size, known, "max_query_capacity" if by_capacity else "max_queriers_per_tenant"
    )


def _reserved_count(value: float, shard_size: int) -> int:
    if value >= 1:
        # Rounded up, as Cortex's `DynamicShardSize`: 1.5 reserves 2 queriers.
        return math.ceil(value)
    if value <= 0:
        return 0
    return _ceil_share(value, shard_size)


def reserved_queriers(shard: Sequence[str], priorities: Iterable[PriorityDef]) -> dict[str, int]:
    """Cortex's reservations: querier -> the priority it is reserved for.

    `shard` must be sorted; each priority in config order takes the next
    queriers. If the reservations would cover the whole shard, there are
    none, so someone is always left to serve everything else.
    """
    wanted = [(p.priority, _reserved_count(p.reserved_queriers, len(shard))) for p in priorities]
    total = sum(count for _, count in wanted)
    if total == 0 or total >= len(shard):
        return {}
    result: dict[str, int] = {}
    pos = 0
    for priority, count in wanted:
        for querier_id in shard[pos : pos + count]:
            result[querier_id] = priority
        pos += count
    return result


class WorkerState(DequeueContext):
    """One worker connection; `request` is what it has in flight.

    The worker is its own dequeue context: its querier and worker ids never
    change, so a dequeue only sets what does (last index, reservations)
    instead of filling a shared context each time. While a request is in
    flight, `leaf` (set by that dequeue) is the leaf it came from, whose
    `owner` is the tenant's record: completing needs no lookup by tenant id.
    """

    __slots__ = ("request", "since")

    def __init__(self, querier_id: str, worker_id: int, since: float) -> None:
        super().__init__()
        self.querier_id = querier_id
        self.worker_id = worker_id
        self.request: Request | None = None
        self.since = since


class QuerierState:
    """A querier process as the queue knows it.

    `reserved` is this querier's entry of `reserved_by_querier` (tenant ->
    priority floor) or None, kept in step by the assignment so a dequeue
    reads it from the querier it already holds instead of a second lookup.
    """

    __slots__ = ("disconnected_at", "querier_id", "reserved", "shutting_down", "workers")

    def __init__(self, querier_id: str) -> None:
        self.querier_id = querier_id
        self.workers: dict[int, WorkerState] = {}
        self.shutting_down = False
        self.disconnected_at: float | None = None
        self.reserved: dict[str, int] | None = None


class TenantQuerierAssignment:
    """Known queriers and, per tenant, its shard and reserved queriers.

    `listener(tenant, old, new)` hears of every shard change so the tree can
    move the tenant between its per-querier sets.
    """

    def __init__(self, listener: ShardListener) -> None:
        self._listener = listener
        self.queriers: dict[str, QuerierState] = {}
        self._sorted: tuple[str, ...] = ()
        self._max_queriers: dict[str, int] = {}
        self._capacity: dict[str, float] = {}
        self._priorities: dict[str, tuple[PriorityDef, ...]] = {}
        self.shards: dict[str, tuple[str, ...]] = {}
        self.reserved_by_tenant: dict[str, dict[str, int]] = {}
        self.reserved_by_querier: dict[str, dict[str, int]] = {}

    def shard_of(self, tenant_id: str) -> Shard:
        return self.shards.get(tenant_id)

    def idle_workers(self, querier_ids: Iterable[str]) -> tuple[int, int]:
        """(idle, connected) worker connections of these queriers (unknown ones: none)."""
        idle = connected = 0
        for querier_id in querier_ids:
            querier = self.queriers.get(querier_id)
            if querier is not None:
                connected += len(querier.workers)
                idle += sum(1 for w in querier.workers.values() if w.request is None)
        return idle, connected

    # -- queriers -------------------------------------------------------
    def connect(self, querier_id: str, now: float) -> WorkerState:
        """Open one worker connection with the lowest free worker id."""
        querier = self.queriers.get(querier_id)
        if querier is None:
            querier = self.queriers[querier_id] = QuerierState(querier_id)
            self._queriers_changed()
            querier.reserved = self.reserved_by_querier.get(querier_id)
        # A new connection means the querier is back, as in Cortex's
        # `addQuerierConnection`: left set, a shutdown announced under its
        # ID (a restart, or another process using the same ID) kept it from
        # work for good while tenant shards still counted it.
        querier.shutting_down = False
        querier.disconnected_at = None
        worker_id = 0
        while worker_id in querier.workers:
            worker_id += 1
        worker = querier.workers[worker_id] = WorkerState(querier_id, worker_id, now)
        return worker

    def disconnect(self, worker: WorkerState, now: float, forget_delay: float) -> None:
        """Close a worker; the querier lingers for the forget delay."""
        querier = self.queriers[worker.querier_id]
        del querier.workers[worker.worker_id]
        if querier.workers:
            return
        if querier.shutting_down or forget_delay <= 0:
            self._forget(querier.querier_id)
        else:
            querier.disconnected_at = now

    def notify_shutdown(self, querier_id: str) -> None:
        """No more work for this querier; forget it once no worker is left."""
        querier = self.queriers.get(querier_id)
        if querier is None:
            return
        if querier.workers:
            querier.shutting_down = True
        else:
            self._forget(querier_id)

    def forget_expired(self, now: float, forget_delay: float) -> list[str]:
        """Forget queriers disconnected for at least the delay."""
        gone = sorted(
            q.querier_id
            for q in self.queriers.values()
            if q.disconnected_at is not None and q.disconnected_at + forget_delay <= now
        )
        for querier_id in gone:
            del self.queriers[querier_id]
        if gone:
            self._queriers_changed()
        return gone

    def _forget(self, querier_id: str) -> None:
        del self.queriers[querier_id]
        self._queriers_changed()

    # -- tenants --------------------------------------------------------
    def set_tenant(
        self,
        tenant_id: str,
        max_queriers: int,
        priority: QueryPriority,
        max_query_capacity: float = 0.0,
    ) -> None:
        """Apply a tenant's limits; reshards that tenant only."""
        if max_queriers > 0:
            self._max_queriers[tenant_id] = max_queriers
        else:
            self._max_queriers.pop(tenant_id, None)
        if max_query_capacity > 0:
            self._capacity[tenant_id] = max_query_capacity
        else:
            self._capacity.pop(tenant_id, None)
        if priority.enabled and any(p.reserved_queriers > 0 for p in priority.priorities):
            self._priorities[tenant_id] = priority.priorities
        else:
            self._priorities.pop(tenant_id, None)
        self._recompute(tenant_id)

    def _queriers_changed(self) -> None:
        self._sorted = tuple(sorted(self.queriers))
        limited = set(self._max_queriers) | set(self._capacity)
        for tenant_id in limited | set(self.shards) | set(self._priorities):
            self._recompute(tenant_id)

    def shard_size(self, tenant_id: str) -> int:
        """The tenant's effective shard size now (0: every querier)."""
        return effective_shard_size(
            self._max_queriers.get(tenant_id, 0),
            self._capacity.get(tenant_id, 0.0),
            len(self._sorted),
        )

    def _recompute(self, tenant_id: str) -> None:
        new = shuffle_shard(tenant_id, self._sorted, self.shard_size(tenant_id))
        old = self.shards.get(tenant_id)
        if new is None:
            self.shards.pop(tenant_id, None)
        else:
            self.shards[tenant_id] = new
        self._set_reservations(tenant_id, new)
        if new != old:
            self._listener(tenant_id, old, new)

    def _set_reservations(self, tenant_id: str, shard: Shard) -> None:
        prios = self._priorities.get(tenant_id)
        new = (
            reserved_queriers(shard if shard is not None else self._sorted, prios) if prios else {}
        )
        old = self.reserved_by_tenant.pop(tenant_id, {})
        if not old and not new:
            return
        by_q = self.reserved_by_querier
        for querier_id in old:
            mine = by_q[querier_id]
            del mine[tenant_id]
            if not mine:
                del by_q[querier_id]
        if new:
            self.reserved_by_tenant[tenant_id] = new
            for querier_id, prio in new.items():
                by_q.setdefault(querier_id, {})[tenant_id] = prio
        queriers = self.queriers
        for querier_id in old.keys() | new.keys():
            querier = queriers.get(querier_id)
            if querier is not None:
                querier.reserved = by_q.get(querier_id)
