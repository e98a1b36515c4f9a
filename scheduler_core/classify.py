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
that boundary is exact; what each selector reads is walked out of the AST
in `selector_spans`, and this module caches it per query text.
`component_for` is Mimir's frontend rule built on `ShouldQueryIngesters` /
`ShouldQueryBlockStore`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scheduler_core.bounds import timestamp_error
from scheduler_core.model import BOTH, INGESTER, STORE_GATEWAY, UNKNOWN, QueryInfo
from scheduler_core.selector_spans import Span, Unclassifiable, ms, parse_spans

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
    try:
        start_ms, end_ms, lookback_ms = ms(start), ms(end), ms(lookback_delta)
    except Unclassifiable:
        return None
    reach = _reach_of(query, lookback_ms)
    if reach is None:
        return None
    low_start, low_end, low_abs, high_start, high_end, high_abs = reach
    low = min(start_ms + low_start, end_ms + low_end, low_abs)
    high = max(start_ms + high_start, end_ms + high_end, high_abs)
    return low / 1000.0, high / 1000.0


# What a query reads, folded over its selectors: the earliest and latest
# millisecond as offsets from the request's start and from its end, and as
# absolute times (`@`); +-inf where no selector is anchored that way.
_Reach = tuple[float, float, float, float, float, float]


def _reach(spans: tuple[Span, ...], lookback_ms: int) -> _Reach:
    """Fold `spans` once, so a request costs the same however many selectors its query has.

    Integer offsets added to integer times give the very sums a walk over
    the spans would, so the fold changes no result, only when the work is done.
    """
    inf = math.inf
    low = {"eval": inf, "start": inf, "end": inf, "abs": inf}
    high = {"eval": -inf, "start": -inf, "end": -inf, "abs": -inf}
    for span in spans:
        # `at` is 0 but for "abs", so one sum serves every anchor. Prometheus
        # 3 reads (t - lookback, t] and (t - range, t]: the sample exactly at
        # the lower bound is excluded, once per selector.
        lower = span.at - span.before_start - (lookback_ms if span.lookback else 0) + 1
        low[span.anchor] = min(low[span.anchor], lower)
        high[span.anchor] = max(high[span.anchor], span.at - span.before_end)
    # An "eval" selector reads from the request's start to its end.
    return (
        min(low["eval"], low["start"]),
        low["end"],
        low["abs"],
        high["start"],
        max(high["eval"], high["end"]),
        high["abs"],
    )


def _reach_of(query: str, lookback_ms: int) -> _Reach | None:
    """`query`'s reach; None if it does not parse or reads no series."""
    if len(query) > _CACHED_QUERY_CHARS:
        return _build_reach(query, lookback_ms)
    return _cached_reach(query, lookback_ms)


def _build_reach(query: str, lookback_ms: int) -> _Reach | None:
    spans = _spans_of(query)
    return _reach(spans, lookback_ms) if spans else None


def parses(query: str) -> bool:
    """Whether the scheduler can read `query` as PromQL (else its component is unknown)."""
    return _spans_of(query) is not None


def _spans_of(query: str) -> tuple[Span, ...] | None:
    """The relative spans of every selector in `query`; None if unparseable.

    Parsing is most of the cost of admitting a request, so it is cached by
    query text alone (texts up to `_CACHED_QUERY_CHARS`); everything
    time-dependent is applied afterwards.
    """
    if len(query) > _CACHED_QUERY_CHARS:
        return parse_spans(query)
    return _cached_spans(query)


_cached_spans = functools.lru_cache(maxsize=8192)(parse_spans)
# Keyed by the lookback too, which a config change may move.
_cached_reach = functools.lru_cache(maxsize=8192)(_build_reach)


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
