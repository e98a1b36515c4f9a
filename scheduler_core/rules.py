"""The plain data priority rules are made of, and what matching may look at.

No behaviour and no imports from the package: `priority` (matching),
`classify` (building a `QueryInfo`) and `validation` (reading rules from a
config) all build on these, and `model` re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PriorityDef", "QueryAttribute", "QueryInfo", "QueryRejection", "TimeRange"]


@dataclass(frozen=True, slots=True)
class QueryInfo:
    """What priority matching may look at for one request.

    `select_start`/`select_end` are the data-select time range (unix seconds)
    derived from the PromQL (range selectors, offsets, `@`, subqueries and
    the lookback delta widen it); None when it cannot be told. `matchers`
    are the `match[]` selectors of a series/labels/label-values call, each
    on its own (a regex matches when it matches any one of them); None means
    `query` holds the request's one selector, if any.
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
    matchers: tuple[str, ...] | None = None


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
class QueryRejection:
    """A tenant's `query_rejection` block (Cortex): requests to refuse with 422.

    A request matching any attribute is rejected before it is queued;
    `enabled` False keeps the attributes without applying them.
    """

    enabled: bool = False
    query_attributes: tuple[QueryAttribute, ...] = ()

    def __init__(
        self,
        enabled: bool = False,
        query_attributes: tuple[QueryAttribute, ...] | list[QueryAttribute] = (),
    ) -> None:
        object.__setattr__(self, "enabled", enabled)
        object.__setattr__(self, "query_attributes", tuple(query_attributes))
