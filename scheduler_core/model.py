"""Plain data shared by every part of the scheduler: requests, limits, rules.

Everything here is a frozen (or slotted) dataclass with no behaviour beyond
trivial helpers, so the queue, the classifier, the validator and the service
layer can all exchange the same values without importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

# Rule data is defined beside the code that reads it and re-exported here,
# so every plain value can still be imported from this one module.
from scheduler_core.priority import QueryPriority
from scheduler_core.rules import PriorityDef, QueryAttribute, QueryInfo, QueryRejection, TimeRange

__all__ = [
    "API_TYPES",
    "BOTH",
    "COMPONENTS",
    "CancelReason",
    "COMPONENT_SELECTIONS",
    "INGESTER",
    "LAYOUTS",
    "STORE_GATEWAY",
    "UNKNOWN",
    "ComponentSelection",
    "Layout",
    "PriorityDef",
    "QueryAttribute",
    "QueryInfo",
    "QueryPriority",
    "QueryRejection",
    "QuerierDisconnected",
    "QuerierNoResult",
    "QueueConfig",
    "Request",
    "TenantLimits",
    "TimeRange",
]

INGESTER = "ingester"
STORE_GATEWAY = "store-gateway"
BOTH = "ingester-and-store-gateway"
UNKNOWN = "unknown"
# The fixed order of query components. Querier-worker priority maps worker w
# to the (w % n)-th of the n components present at the root, in this order,
# so the order is part of the contract.
COMPONENTS: tuple[str, ...] = (INGESTER, STORE_GATEWAY, BOTH, UNKNOWN)


class CancelReason(str):
    """The reason of a failure that is a cancel: someone took the request back.

    An operator's cancel ends a request through `on_failed`, because its
    frontend still waits and must be told why; to every transport this is
    the plain reason text. Observers that count how requests end
    (`scheduler_core.stats.RollingStats`) count it with the frontends'
    cancels: it left the queue because someone cancelled it.
    """

    __slots__ = ()


class QuerierDisconnected(str):
    """The reason of a failure because the querier running the request went away.

    Its text names the querier, so it is plain reason text to transports;
    observers that label series by reason (`api.wire.failure_metrics`) tell
    it by its type, never by reading the words.
    """

    __slots__ = ()


class QuerierNoResult(str):
    """The reason of a failure because the querier finished without a result.

    A Cortex querier says "done" even when its result call failed (a result
    over the scheduler's message size, a network error): the frontend would
    wait for ever. Told by its type, like `QuerierDisconnected`.
    """

    __slots__ = ()


API_TYPES: tuple[str, ...] = (
    "query",
    "query_range",
    "series",
    "labels",
    "label_values",
    "metadata",
    "other",
)

Layout = Literal["tenant-first", "component-first"]
ComponentSelection = Literal["round-robin", "querier-worker-priority"]
# The same values for checks at run time, so a new one is added in one place.
LAYOUTS: tuple[str, ...] = get_args(Layout)
COMPONENT_SELECTIONS: tuple[str, ...] = get_args(ComponentSelection)


@dataclass(slots=True, eq=False)
class Request:
    """One query waiting in (or taken from) the queue.

    `enqueued_at` is stamped by the queue from its injected clock, and so is
    `dispatched_at` each time a worker takes the request (None while it
    waits: a re-queue clears it), so an observer can tell how long a run held its
    querier when it ends. `attempts`
    counts how often the request was handed to a querier, so the runtime can
    re-queue a request whose querier vanished exactly once. `payload` is
    opaque to the scheduler: transports keep their reply handle there.
    Identity is the object itself (eq=False), and `id` is unique per queue.

    `priority_rule` and `priority_source` say how the priority was chosen,
    set once when the frontend classifies the request (the queue never
    reads them; the inspector shows them): the matched rule as
    (priority index, attribute index) into the tenant's `query_priority`,
    or None, and "rule", "default" or "disabled".

    `actor_path` is who inside the tenant sent it (Loki's
    `X-Loki-Actor-Path`, split on "|"): the queue cuts it to
    `max_queue_hierarchy_levels` on entry, and it then names the actor
    sub-queue the request waits in. `sent_actor_path` is the path as it
    came (`arrived_actor_path` holds it once a cut made the two differ, so
    an uncut request stores nothing more); the traffic recorder keeps that
    one, since a what-if run of more levels needs the levels the queue
    ignored.
    """

    id: str
    tenant_id: str
    component: str = UNKNOWN
    priority: int = 0
    query: str = ""
    api_type: str = "query"
    start: float | None = None
    end: float | None = None
    step: float | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    enqueued_at: float = 0.0
    attempts: int = 0
    payload: Any = None
    priority_rule: tuple[int, int] | None = None
    priority_source: str = "default"
    actor_path: tuple[str, ...] = ()
    dispatched_at: float | None = None
    arrived_actor_path: tuple[str, ...] | None = None

    @property
    def sent_actor_path(self) -> tuple[str, ...]:
        """The actor path as the request arrived, before the queue cut it."""
        arrived = self.arrived_actor_path
        return self.actor_path if arrived is None else arrived


@dataclass(frozen=True, slots=True)
class TenantLimits:
    """A tenant's scheduling limits, as in Cortex's per-tenant overrides.

    `max_queriers` 0 means the tenant may use every querier (no shard);
    `max_outstanding` None means the queue-wide default applies;
    `query_rejection` is checked before priorities (Cortex's order).
    `max_query_capacity` is Loki's limit, the share (0-1) of the queriers
    the tenant may use, 0 for no cap; with both set the shard is
    min(max_queriers, ceil(queriers * max_query_capacity)).
    """

    max_queriers: int = 0
    max_outstanding: int | None = None
    query_priority: QueryPriority = field(default_factory=QueryPriority)
    query_rejection: QueryRejection = field(default_factory=QueryRejection)
    max_query_capacity: float = 0.0


@dataclass(frozen=True, slots=True)
class QueueConfig:
    """Queue-wide settings; all may change at run time.

    `priority_aging_seconds` 0 disables aging; otherwise a request's effective
    rank is `priority * priority_aging_seconds - enqueued_at`, which is time
    invariant, so one priority level is worth that many seconds of waiting.
    `max_queue_hierarchy_levels` (Loki's name and default) is how many levels
    of an actor path make sub-queues (0: actor paths are ignored), and
    `actor_path_header` the request header that carries the path.
    `stuck_threshold_seconds` is the wait after which the inspector marks a
    node whose oldest request waited longer as stuck (the queue ignores it).
    `max_federated_tenants` (Mimir's `-tenant-federation.max-tenants`) is how
    many tenants one federated org ID `a|b|...` may name; 0 is no limit, as
    in Cortex, which bounds one only by the HTTP header size.
    """

    layout: Layout = "tenant-first"
    component_selection: ComponentSelection = "round-robin"
    max_outstanding_requests_per_tenant: int = 100
    querier_forget_delay: float = 0.0
    priority_aging_seconds: float = 0.0
    query_ingesters_within: float = 13 * 3600.0
    query_store_after: float = 12 * 3600.0
    max_queue_hierarchy_levels: int = 3
    actor_path_header: str = "X-Loki-Actor-Path"
    stuck_threshold_seconds: float = 60.0
    max_federated_tenants: int = 0

    def outstanding_limit(self, limits: TenantLimits | None) -> int:
        """A tenant's outstanding limit in force: its own, else this queue-wide default."""
        if limits is None or limits.max_outstanding is None:
            return self.max_outstanding_requests_per_tenant
        return limits.max_outstanding
