"""What a request reads, and so which query component will serve it.

`select_range` follows Prometheus' `FindMinMaxTime` / `getTimeRangesForSelector`
(as Cortex calls it): every selector reads from its evaluation window, minus
its range (or the lookback delta for an instant selector), minus offsets;
enclosing subqueries widen the window by their range and offset, and an `@`
pins the evaluation time (an `@` on a subquery discards what enclosing
subqueries added). `component_for` is Mimir's frontend rule built on
`ShouldQueryIngesters` / `ShouldQueryBlockStore`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import promql_parser
import re2

from scheduler_core.bounds import timestamp_error
from scheduler_core.model import BOTH, INGESTER, STORE_GATEWAY, UNKNOWN, QueryInfo

__all__ = [
    "EXPRESSION_API_TYPES",
    "Classification",
    "classify",
    "component_for",
    "query_info",
    "select_pair",
    "select_range",
]

EXPRESSION_API_TYPES = frozenset({"query", "query_range"})
_TIME_RANGE_API_TYPES = frozenset({"series", "labels", "label_values", "metadata"})
_HOUR = 3600.0
_NEGATIVE_AT = re2.compile(r"@\s*-")


@dataclass(frozen=True, slots=True)
class Classification:
    """The component a request goes to and what priority matching sees of it."""

    component: str
    info: QueryInfo


@dataclass(frozen=True, slots=True)
class _Subquery:
    """One enclosing subquery: its range, its offset, its `@` anchor if any."""

    range: float
    offset: float
    anchor: tuple[str, float] | None


@dataclass(frozen=True, slots=True)
class _Span:
    """What one selector reads, relative to the request's evaluation range.

    `anchor` is "eval" (the request's start..end), "start" or "end" (an `@
    start()`/`@ end()` pins both sides there) or "abs" (an `@` at `at`).
    Keeping spans relative lets one parse serve every time range the same
    query text is asked for, which is how dashboards ask.
    """

    anchor: str
    at: float
    before_start: float
    before_end: float
    lookback: bool


class _Unclassifiable(Exception):
    """The AST holds a value this module cannot turn into a time."""


def select_range(
    query: str,
    api_type: str,
    start: float | None,
    end: float | None,
    lookback_delta: float = 300.0,
) -> tuple[float, float] | None:
    """[earliest, latest] unix time the request reads, or None when unknown.

    An instant query passes its evaluation time as start and end (either one
    alone is enough). Series/labels/metadata requests read their own range.
    """
    if api_type in _TIME_RANGE_API_TYPES:
        return (start, end) if start is not None and end is not None else None
    if api_type not in EXPRESSION_API_TYPES:
        return None
    if api_type == "query":
        start = end = start if start is not None else end
    if start is None or end is None:
        return None
    if timestamp_error(start) is not None or timestamp_error(end) is not None:
        return None  # not a time Prometheus accepts (inf, NaN, -1e308): range unknown
    spans = _spans_of(query)
    if not spans:
        return None
    lows, highs = [], []
    for span in spans:
        if span.anchor == "eval":
            low, high = start, end
        elif span.anchor == "start":
            low = high = start
        elif span.anchor == "end":
            low = high = end
        else:
            low = high = span.at
        lows.append(low - span.before_start - (lookback_delta if span.lookback else 0.0))
        highs.append(high - span.before_end)
    return min(lows), max(highs)


@functools.lru_cache(maxsize=8192)
def _spans_of(query: str) -> tuple[_Span, ...] | None:
    """The relative spans of every selector in `query`; None if unparseable.

    Parsing is most of the cost of admitting a request, so it is cached by
    query text alone; everything time-dependent is applied afterwards.
    """
    negative_at = _NEGATIVE_AT.search(query) is not None
    try:
        expr = _guarded(promql_parser.parse, query)
        # Reading the AST can fail too: `x[100000000y]` parses, but its
        # range does not fit the extension's timedelta and raises on access.
        spans: tuple[_Span, ...] = _guarded(
            lambda _: tuple(_selector_spans(expr, (), 0.0, negative_at)), ""
        )
        return spans
    except _Unclassifiable:
        return None


def _guarded(call: Callable[[str], Any], arg: str) -> Any:
    """Run a promql-parser call, turning any failure into `_Unclassifiable`.

    The Rust extension signals some bad input by panicking, which reaches
    Python as a BaseException rather than an Exception.
    """
    try:
        return call(arg)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        raise _Unclassifiable(str(exc)) from None


def _selector_spans(
    node: Any, subqueries: tuple[_Subquery, ...], eval_range: float, negative_at: bool
) -> Iterator[_Span]:
    """Depth-first over the AST, carrying the enclosing subqueries from the root."""
    if isinstance(node, promql_parser.VectorSelector):
        yield _span(node, subqueries, eval_range, negative_at)
    elif isinstance(node, promql_parser.MatrixSelector):
        yield from _selector_spans(
            node.vector_selector, subqueries, _seconds(node.range), negative_at
        )
    elif isinstance(node, promql_parser.SubqueryExpr):
        sub = _Subquery(_seconds(node.range), _seconds(node.offset), _anchor(node.at, negative_at))
        yield from _selector_spans(node.expr, (*subqueries, sub), 0.0, negative_at)
    else:
        for child in _children(node):
            yield from _selector_spans(child, subqueries, 0.0, negative_at)


def _children(node: Any) -> list[Any]:
    if isinstance(node, promql_parser.BinaryExpr):
        return [node.lhs, node.rhs]
    if isinstance(node, promql_parser.ParenExpr | promql_parser.UnaryExpr):
        return [node.expr]
    if isinstance(node, promql_parser.AggregateExpr):
        return [node.expr] if node.param is None else [node.param, node.expr]
    if isinstance(node, promql_parser.Call):
        return list(node.args)
    return []


def _span(
    node: Any, subqueries: tuple[_Subquery, ...], eval_range: float, negative_at: bool
) -> _Span:
    """Prometheus' `getTimeRangesForSelector` for one selector, kept relative."""
    sub_offset = sub_range = 0.0
    anchor: tuple[str, float] = ("eval", 0.0)
    for sub in subqueries:
        if sub.anchor is not None:
            # An `@` on a subquery makes everything inside it absolute, so
            # what the enclosing subqueries added no longer applies.
            sub_offset, sub_range, anchor = sub.offset, sub.range, sub.anchor
        else:
            sub_offset += sub.offset
            sub_range += sub.range
    own = _anchor(node.at, negative_at)
    if own is not None:
        anchor, before_start, before_end = own, 0.0, 0.0
    else:
        before_start, before_end = sub_offset + sub_range, sub_offset
    offset = _seconds(node.offset)
    return _Span(
        anchor=anchor[0],
        at=anchor[1],
        before_start=before_start + eval_range + offset,
        before_end=before_end + offset,
        lookback=not eval_range,
    )


def _seconds(delta: Any) -> float:
    return 0.0 if delta is None else float(delta.total_seconds())


def _anchor(modifier: Any, negative_at: bool) -> tuple[str, float] | None:
    """Where an `@` modifier pins evaluation; `start()`/`end()` stay relative."""
    if modifier is None:
        return None
    kind = modifier.type
    if kind == promql_parser.AtModifierType.Start:
        return ("start", 0.0)
    if kind == promql_parser.AtModifierType.End:
        return ("end", 0.0)
    # promql-parser prints a negative `@` as 0 and panics (noisily, on
    # stderr) when asked for it, so a possible negative `@` is refused first.
    if negative_at and str(modifier) == "@ 0.000":
        raise _Unclassifiable("@ before 1970")
    pinned = _guarded(lambda _: modifier.at, "")
    if pinned is None:
        raise _Unclassifiable("@ modifier without a time")
    return ("abs", float(pinned.timestamp()))


def component_for(
    select: tuple[float, float] | None,
    now: float,
    query_ingesters_within: float = 13 * _HOUR,
    query_store_after: float = 12 * _HOUR,
) -> str:
    """Mimir's query component for a data-select range.

    Ingesters are skipped when all data ends at or before
    now - query_ingesters_within; the store is skipped when all data starts
    at or after now - query_store_after. A zero window disables its skip.
    """
    if select is None:
        return UNKNOWN
    min_t, max_t = select
    uses_ingesters = not (query_ingesters_within and max_t <= now - query_ingesters_within)
    uses_store = not (query_store_after and min_t >= now - query_store_after)
    if uses_ingesters and not uses_store:
        return INGESTER
    if uses_store and not uses_ingesters:
        return STORE_GATEWAY
    return BOTH


def _header(headers: Mapping[str, str], name: str) -> str:
    wanted = name.lower()
    return next((v for k, v in headers.items() if k.lower() == wanted), "")


def select_pair(info: QueryInfo) -> tuple[float, float] | None:
    """`info`'s data-select range as one value: None unless both ends are known."""
    if info.select_start is None or info.select_end is None:
        return None
    return info.select_start, info.select_end


def query_info(
    *,
    query: str,
    api_type: str,
    start: float | None,
    end: float | None,
    step: float | None,
    headers: Mapping[str, str],
    lookback_delta: float = 300.0,
    now: float | None = None,
) -> QueryInfo:
    """What priority matching sees of one request.

    An instant query with no time is evaluated at `now`, as Cortex does.
    """
    if api_type == "query":
        at = start if start is not None else end if end is not None else now
        start = end = at
    select = select_range(query, api_type, start, end, lookback_delta)
    return QueryInfo(
        query=query,
        api_type=api_type,
        start=start,
        end=end,
        step=step,
        select_start=select[0] if select else None,
        select_end=select[1] if select else None,
        user_agent=_header(headers, "User-Agent"),
        dashboard_uid=_header(headers, "X-Dashboard-Uid"),
        panel_id=_header(headers, "X-Panel-Id"),
    )


def classify(
    *,
    query: str,
    api_type: str,
    start: float | None,
    end: float | None,
    step: float | None,
    headers: Mapping[str, str],
    now: float,
    query_ingesters_within: float = 13 * _HOUR,
    query_store_after: float = 12 * _HOUR,
    lookback_delta: float = 300.0,
) -> Classification:
    """Component and priority-matching view of one request, in one call."""
    info = query_info(
        query=query,
        api_type=api_type,
        start=start,
        end=end,
        step=step,
        headers=headers,
        lookback_delta=lookback_delta,
        now=now,
    )
    component = component_for(select_pair(info), now, query_ingesters_within, query_store_after)
    return Classification(component, info)
