"""Immutable views of the queue for inspectors, metrics and the REST API.

A snapshot is built by `RequestQueue.snapshot()` from counters the queue keeps
up to date on every operation, so taking one never walks queued requests.
All containers are tuples so a snapshot can be handed to another task or
serialised while the queue keeps changing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "MAX_ACTORS_LISTED",
    "ActorSnapshot",
    "LeafSnapshot",
    "QuerierSnapshot",
    "QueueSnapshot",
    "Reservation",
    "TenantServing",
    "TenantSnapshot",
    "WorkerSnapshot",
]


# How many actor sub-queues one leaf's snapshot lists; the rest are summed
# into "others" rows, so a tenant with 100,000 actors costs a few rows.
MAX_ACTORS_LISTED = 20


class ActorSnapshot(NamedTuple):
    """One actor sub-queue under a leaf (all priorities together).

    `path` is the actor path below the leaf, its length the depth. An
    "others" row (`others` > 0) sums that many more sibling sub-queues under
    `path[:-1]` that were not listed; its last path element is "".
    """

    path: tuple[str, ...]
    length: int
    oldest_enqueued_at: float
    others: int = 0


class LeafSnapshot(NamedTuple):
    """One (tenant, component) queue: its length split by priority.

    `actors` lists its actor sub-queues, parents before their children,
    biggest first, at most `MAX_ACTORS_LISTED` rows plus "others" rows; the
    leaf's own requests with no actor path are `length` minus the top-level
    rows' lengths.
    """

    tenant_id: str
    component: str
    length: int
    by_priority: tuple[tuple[int, int], ...]  # (priority, count), highest first
    oldest_enqueued_at: float
    actors: tuple[ActorSnapshot, ...] = ()


class Reservation(NamedTuple):
    """Querier `querier_id` is reserved for `tenant_id`'s priority >= `priority`."""

    tenant_id: str
    priority: int
    querier_id: str


class TenantSnapshot(NamedTuple):
    """A tenant the queue knows: queued work, shard, reservations."""

    tenant_id: str
    length: int
    max_outstanding: int
    shard: tuple[str, ...] | None  # None: every querier may serve it
    reservations: tuple[Reservation, ...]
    priority_enabled: bool


class TenantServing(NamedTuple):
    """Which queriers may serve one tenant now (`RequestQueue.serving`).

    `shard` is None when every querier may (no shuffle shard); `queriers`
    counts the queriers the shards are drawn from (connected, or kept by
    `querier_forget_delay`). Each reservation is Cortex's: that querier
    takes only this tenant's requests of that priority or higher, so the
    tenant's lower priorities wait for the rest of its shard.
    """

    tenant_id: str
    shard: tuple[str, ...] | None
    queriers: int
    reservations: tuple[Reservation, ...]

    def by_priority(self) -> dict[int, list[str]]:
        """Priority -> the queriers reserved for it, in the reservations' order."""
        out: dict[int, list[str]] = {}
        for held in self.reservations:
            out.setdefault(held.priority, []).append(held.querier_id)
        return out


class WorkerSnapshot(NamedTuple):
    """One worker connection; `request_id` is None when idle."""

    querier_id: str
    worker_id: int
    request_id: str | None
    tenant_id: str | None
    component: str | None
    priority: int | None
    since: float  # when it became busy or idle
    waiting: bool  # blocked in next_request (runtime) rather than just idle


class QuerierSnapshot(NamedTuple):
    """A querier process and its workers."""

    querier_id: str
    workers: tuple[WorkerSnapshot, ...]
    shutting_down: bool
    connected: bool  # False while kept only by querier_forget_delay
    disconnected_at: float | None
    reservations: tuple[Reservation, ...]
    reserved_idle: bool  # reserved somewhere and no worker busy


@dataclass(frozen=True, slots=True)
class QueueSnapshot:
    """The whole queue at one instant of the queue's clock."""

    taken_at: float
    layout: str
    component_selection: str
    total: int
    leaves: tuple[LeafSnapshot, ...]
    tenants: tuple[TenantSnapshot, ...]
    queriers: tuple[QuerierSnapshot, ...]
