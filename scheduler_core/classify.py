"""What a request reads, and so which query component will serve it.

`select_range` follows Prometheus' `FindMinMaxTime` / `getTimeRangesForSelector`
(as Cortex calls it): every selector reads from its evaluation window, minus
its range (or the lookback delta for an instant selector), minus offsets;
enclosing subqueries widen the window by their range and offset, and an `@`
pins the evaluation time (an `@` on a subquery discards what enclosing
subqueries added). As in Prometheus 3 (which current Cortex vendors), the
sample exactly at `t - lookback` (instant selectors) or `t - range` (range
selectors) is not read, so each selector's range starts 1 ms after that
point; ranges are computed in integer milliseconds, as Prometheus does, so
that boundary is exact. `component_for` is Mimir's frontend rule built on
`ShouldQueryIngesters` / `ShouldQueryBlockStore`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
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
    "client_headers",
    "component_for",
    "parses",
    "query_info",
    "select_pair",
    "select_range",
]

EXPRESSION_API_TYPES = frozenset({"query", "query_range"})
_TIME_RANGE_API_TYPES = frozenset({"series", "labels", "label_values", "metadata"})
_HOUR = 3600.0
_NEGATIVE_AT = re2.compile(r"@\s*-")
# Go's int64 milliseconds span about 292 million years either side of 1970.
_MAX_SECONDS = 9.2e15
# Longer query texts are parsed on every request and never kept. A websocket
# frame may carry a 1 MB query and a gRPC message 16 MB, so caching any text
# would let a few thousand distinct long queries pin gigabytes; dashboards'
# queries are far shorter.
_CACHED_QUERY_CHARS = 4096


@dataclass(frozen=True, slots=True)
class Classification:
    """The component a request goes to and what priority matching sees of it."""

    component: str
    info: QueryInfo


@dataclass(frozen=True, slots=True)
class _Subquery:
    """One enclosing subquery: its range and offset (ms), its `@` anchor if any."""

    range: int
    offset: int
    anchor: tuple[str, int] | None


@dataclass(frozen=True, slots=True)
class _Span:
    """What one selector reads, relative to the request's evaluation range.

    `anchor` is "eval" (the request's start..end), "start" or "end" (an `@
    start()`/`@ end()` pins both sides there) or "abs" (an `@` at `at`).
    Keeping spans relative lets one parse serve every time range the same
    query text is asked for, which is how dashboards ask. Every number is
    integer milliseconds.
    """

    anchor: str
    at: int
    before_start: int
    before_end: int
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
    try:
        start_ms, end_ms, lookback_ms = _ms(start), _ms(end), _ms(lookback_delta)
    except _Unclassifiable:
        return None
    lows, highs = [], []
    for span in spans:
        if span.anchor == "eval":
            low, high = start_ms, end_ms
        elif span.anchor == "start":
            low = high = start_ms
        elif span.anchor == "end":
            low = high = end_ms
        else:
            low = high = span.at
        # Prometheus 3 reads (t - lookback, t] and (t - range, t]: the sample
        # exactly at the lower bound is excluded, once per selector.
        lows.append(low - span.before_start - (lookback_ms if span.lookback else 0) + 1)
        highs.append(high - span.before_end)
    return min(lows) / 1000.0, max(highs) / 1000.0


def _ms(seconds: float) -> int:
    """Integer milliseconds, as Prometheus times and durations are.

    A time beyond what Prometheus can represent (or not finite) makes the
    request's range unknown rather than raising.
    """
    if not math.isfinite(seconds) or abs(seconds) > _MAX_SECONDS:
        raise _Unclassifiable(f"time out of range: {seconds!r}")
    return round(seconds * 1000.0)


def parses(query: str) -> bool:
    """Whether the scheduler can read `query` as PromQL (else its component is unknown)."""
    return _spans_of(query) is not None


def _spans_of(query: str) -> tuple[_Span, ...] | None:
    """The relative spans of every selector in `query`; None if unparseable.

    Parsing is most of the cost of admitting a request, so it is cached by
    query text alone (texts up to `_CACHED_QUERY_CHARS`); everything
    time-dependent is applied afterwards.
    """
    if len(query) > _CACHED_QUERY_CHARS:
        return _parse_spans(query)
    return _cached_spans(query)


def _parse_spans(query: str) -> tuple[_Span, ...] | None:
    negative_at = _NEGATIVE_AT.search(query) is not None
    try:
        expr = _guarded(promql_parser.parse, query)
        # Reading the AST can fail too: `x[100000000y]` parses, but its
        # range does not fit the extension's timedelta and raises on access.
        spans: tuple[_Span, ...] = _guarded(
            lambda _: tuple(_selector_spans(expr, (), 0, negative_at)), ""
        )
        return spans
    except _Unclassifiable:
        return None


_cached_spans = functools.lru_cache(maxsize=8192)(_parse_spans)


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
    node: Any, subqueries: tuple[_Subquery, ...], eval_range: int, negative_at: bool
) -> Iterator[_Span]:
    """Depth-first over the AST, carrying the enclosing subqueries from the root."""
    if isinstance(node, promql_parser.VectorSelector):
        yield _span(node, subqueries, eval_range, negative_at)
    elif isinstance(node, promql_parser.MatrixSelector):
        yield from _selector_spans(
            node.vector_selector, subqueries, _millis(node.range), negative_at
        )
    elif isinstance(node, promql_parser.SubqueryExpr):
        sub = _Subquery(_millis(node.range), _millis(node.offset), _anchor(node.at, negative_at))
        yield from _selector_spans(node.expr, (*subqueries, sub), 0, negative_at)
    else:
        for child in _children(node):
            yield from _selector_spans(child, subqueries, 0, negative_at)


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
    node: Any, subqueries: tuple[_Subquery, ...], eval_range: int, negative_at: bool
) -> _Span:
    """Prometheus' `getTimeRangesForSelector` for one selector, kept relative."""
    sub_offset = sub_range = 0
    anchor: tuple[str, int] = ("eval", 0)
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
        anchor, before_start, before_end = own, 0, 0
    else:
        before_start, before_end = sub_offset + sub_range, sub_offset
    offset = _millis(node.offset)
    return _Span(
        anchor=anchor[0],
        at=anchor[1],
        before_start=before_start + eval_range + offset,
        before_end=before_end + offset,
        lookback=not eval_range,
    )


def _millis(delta: Any) -> int:
    return 0 if delta is None else _ms(float(delta.total_seconds()))


def _anchor(modifier: Any, negative_at: bool) -> tuple[str, int] | None:
    """Where an `@` modifier pins evaluation; `start()`/`end()` stay relative."""
    if modifier is None:
        return None
    kind = modifier.type
    if kind == promql_parser.AtModifierType.Start:
        return ("start", 0)
    if kind == promql_parser.AtModifierType.End:
        return ("end", 0)
    # promql-parser prints a negative `@` as 0 and panics (noisily, on
    # stderr) when asked for it, so a possible negative `@` is refused first.
    if negative_at and str(modifier) == "@ 0.000":
        raise _Unclassifiable("@ before 1970")
    pinned = _guarded(lambda _: modifier.at, "")
    if pinned is None:
        raise _Unclassifiable("@ modifier without a time")
    return ("abs", _ms(float(pinned.timestamp())))


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


# What priority matching reads of a request's headers, by lower-case name.
_CLIENT_HEADERS = {"user-agent": 0, "x-dashboard-uid": 1, "x-panel-id": 2}


def client_headers(headers: Mapping[str, str]) -> tuple[str, str, str]:
    """User-Agent, X-Dashboard-Uid and X-Panel-Id in one pass, any case; the first one wins."""
    found: list[str | None] = [None, None, None]
    for name, value in headers.items():
        slot = _CLIENT_HEADERS.get(name.lower())
        if slot is not None and found[slot] is None:
            found[slot] = value
    user_agent, dashboard_uid, panel_id = found
    return user_agent or "", dashboard_uid or "", panel_id or ""


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
    matchers: Sequence[str] | None = None,
) -> QueryInfo:
    """What priority matching sees of one request.

    An instant query with no time is evaluated at `now`, as Cortex does.
    `matchers` are a metadata call's `match[]` selectors, when the caller
    has them apart (a forwarded HTTP request); see `QueryInfo.matchers`.
    """
    # Evaluated at `now` (a new time on every call), a query is not worth keeping.
    repeats = api_type != "query" or start is not None or end is not None
    if api_type == "query":
        at = start if start is not None else end if end is not None else now
        start = end = at
    user_agent, dashboard_uid, panel_id = client_headers(headers)
    fields = (query, api_type, start, end, step, user_agent, dashboard_uid, panel_id)
    kept = sum(map(len, (query, user_agent, dashboard_uid, panel_id)))
    if repeats and matchers is None and kept <= _CACHED_QUERY_CHARS:
        return _cached_info(*fields, lookback_delta)
    return _build_info(*fields, lookback_delta, matchers)


def _build_info(
    query: str,
    api_type: str,
    start: float | None,
    end: float | None,
    step: float | None,
    user_agent: str,
    dashboard_uid: str,
    panel_id: str,
    lookback_delta: float,
    matchers: Sequence[str] | None = None,
) -> QueryInfo:
    select = select_range(query, api_type, start, end, lookback_delta)
    return QueryInfo(
        query=query,
        api_type=api_type,
        start=start,
        end=end,
        step=step,
        select_start=select[0] if select else None,
        select_end=select[1] if select else None,
        user_agent=user_agent,
        dashboard_uid=dashboard_uid,
        panel_id=panel_id,
        matchers=None if matchers is None else tuple(matchers),
    )


# Dashboards ask the same query over the same step-aligned range many times
# (each refresh, each viewer), so the whole QueryInfo is kept per input. It
# depends on nothing else once an instant query's time is resolved (`now`
# only fills that in), and it is immutable, so a hit is exact. `typed`
# keeps 60 and 60.0 apart: the info hands back the numbers it was given.
_cached_info = functools.lru_cache(maxsize=4096, typed=True)(_build_info)


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
    matchers: Sequence[str] | None = None,
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
        matchers=matchers,
    )
    component = component_for(select_pair(info), now, query_ingesters_within, query_store_after)
    return Classification(component, info)
