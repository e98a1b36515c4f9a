"""What the priority tests match: requests built on a fixed clock, and shorthands.

`instant`, `ranged` and `series` build the `QueryInfo` a request would
classify to (an instant query over a plain selector, a range query, a
metadata call); `one` wraps a single attribute in an enabled config, and
`matches` says whether `match_priority` took it at `NOW`.
"""

from __future__ import annotations

from scheduler_core.model import PriorityDef, QueryAttribute, QueryInfo, QueryPriority
from scheduler_core.priority import PriorityMatch, match_priority

# Deliberately not on a minute boundary, so the minute flooring shows.
NOW = 1_700_000_000.0
H = 3600.0
M = 60.0


def instant(query: str, ago: float = 0.0, lookback: float = 5 * M, **kw: object) -> QueryInfo:
    """An instant query evaluated `ago` seconds before NOW over a plain selector."""
    t = NOW - ago
    return QueryInfo(
        query=query,
        api_type="query",
        start=t,
        end=t,
        select_start=t - lookback,
        select_end=t,
        **kw,  # type: ignore[arg-type]
    )


def ranged(query: str, start: float, end: float, step: float = 60.0, **kw: object) -> QueryInfo:
    return QueryInfo(
        query=query,
        api_type="query_range",
        start=start,
        end=end,
        step=step,
        select_start=start - 5 * M,
        select_end=end,
        **kw,  # type: ignore[arg-type]
    )


def one(attr: QueryAttribute, priority: int = 5, default: int = 0) -> QueryPriority:
    return QueryPriority(True, default, [PriorityDef(priority, 0, [attr])])


def matches(attr: QueryAttribute, info: QueryInfo) -> bool:
    return match_priority(one(attr), info, NOW).source == "rule"


def messages(result: PriorityMatch) -> list[str]:
    return [r.message for r in result.reasons]


def series(matchers: str, start: float | None, end: float | None, **kw: object) -> QueryInfo:
    # For metadata calls the select range is the request's own range.
    return QueryInfo(
        query=matchers,
        api_type="series",
        start=start,
        end=end,
        select_start=start,
        select_end=end,
        **kw,  # type: ignore[arg-type]
    )
