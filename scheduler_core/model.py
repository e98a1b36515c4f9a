"""Plain data shared by every part of the scheduler: requests, limits, rules.

Everything here is a frozen (or slotted) dataclass with no behaviour beyond
trivial helpers, so the queue, the classifier, the validator and the service
layer can all exchange the same values without importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "API_TYPES",
    "BOTH",
    "COMPONENTS",
    "INGESTER",
    "STORE_GATEWAY",
    "UNKNOWN",
    "ComponentSelection",
    "Layout",
    "PriorityDef",
    "QueryAttribute",
    "QueryInfo",
    "QueryPriority",
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


@dataclass(slots=True, eq=False)
class Request:
    """One query waiting in (or taken from) the queue.

    `enqueued_at` is stamped by the queue from its injected clock. `attempts`
    counts how often the request was handed to a querier, so the runtime can
    re-queue a request whose querier vanished exactly once. `payload` is
    opaque to the scheduler: transports keep their reply handle there.
    Identity is the object itself (eq=False), and `id` is unique per queue.
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


@dataclass(frozen=True, slots=True)
class QueryInfo:
    """What priority matching may look at for one request.

    `select_start`/`select_end` are the data-select time range (unix seconds)
    derived from the PromQL (range selectors, offsets, `@`, subqueries and
    the lookback delta widen it); None when it cannot be told.
    """

    query: str = ""
    api_type: str = "query"
    start: float | None = None
    end: float | None = None
    step: float | None = None
    select_start: float | None = None
    select_end: float | None = None
    user_agent: str = ""
    dashboard_uid: str = ""
    panel_id: str = ""


@dataclass(frozen=True, slots=True)
class TimeRange:
    """A pair of optional durations in seconds; None means not checked."""

    min: float | None = None
    max: float | None = None


@dataclass(frozen=True, slots=True)
class QueryAttribute:
    """One matcher of a priority: every field that is set must match.

    `time_window` uses Cortex's meaning: `start`/`end` are durations before
    now (seconds); 0 or None means that side is not checked.
    """

    regex: str | None = None
    time_window: TimeRange | None = None
    api_type: str | None = None
    time_range_limit: TimeRange | None = None
    query_step_limit: TimeRange | None = None
    user_agent_regex: str | None = None
    dashboard_uid: str | None = None
    panel_id: str | None = None


@dataclass(frozen=True, slots=True)
class PriorityDef:
    """One priority level: its value, its reservation, its attributes.

    `reserved_queriers` >= 1 is a count; 0 < x < 1 is a share of the
    tenant's shard, rounded up.
    """

    priority: int
    reserved_queriers: float = 0
    query_attributes: tuple[QueryAttribute, ...] = ()

    def __init__(
        self,
        priority: int,
        reserved_queriers: float = 0,
        query_attributes: tuple[QueryAttribute, ...] | list[QueryAttribute] = (),
    ) -> None:
        object.__setattr__(self, "priority", priority)
        object.__setattr__(self, "reserved_queriers", reserved_queriers)
        object.__setattr__(self, "query_attributes", tuple(query_attributes))


@dataclass(frozen=True, slots=True)
class QueryPriority:
    """A tenant's `query_priority` block, with Cortex's matching semantics."""

    enabled: bool = False
    default_priority: int = 0
    priorities: tuple[PriorityDef, ...] = ()

    def __init__(
        self,
        enabled: bool = False,
        default_priority: int = 0,
        priorities: tuple[PriorityDef, ...] | list[PriorityDef] = (),
    ) -> None:
        object.__setattr__(self, "enabled", enabled)
        object.__setattr__(self, "default_priority", default_priority)
        object.__setattr__(self, "priorities", tuple(priorities))

    def priority_for(self, info: QueryInfo, now: float) -> int:
        """The priority Cortex would give this request (see `priority.py`)."""
        from scheduler_core.priority import match_priority

        return match_priority(self, info, now).priority


@dataclass(frozen=True, slots=True)
class TenantLimits:
    """A tenant's scheduling limits, as in Cortex's per-tenant overrides.

    `max_queriers` 0 means the tenant may use every querier (no shard);
    `max_outstanding` None means the queue-wide default applies.
    """

    max_queriers: int = 0
    max_outstanding: int | None = None
    query_priority: QueryPriority = field(default_factory=QueryPriority)


@dataclass(frozen=True, slots=True)
class QueueConfig:
    """Queue-wide settings; all may change at run time.

    `priority_aging_seconds` 0 disables aging; otherwise a request's effective
    rank is `priority * priority_aging_seconds - enqueued_at`, which is time
    invariant, so one priority level is worth that many seconds of waiting.
    """

    layout: Layout = "tenant-first"
    component_selection: ComponentSelection = "round-robin"
    max_outstanding_requests_per_tenant: int = 100
    querier_forget_delay: float = 0.0
    priority_aging_seconds: float = 0.0
    query_ingesters_within: float = 13 * 3600.0
    query_store_after: float = 12 * 3600.0
