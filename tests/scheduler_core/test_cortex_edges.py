"""Cortex-exact matching at the edges: each boundary one millisecond either side.

Current Cortex vendors Prometheus 3, whose `getTimeRangesForSelector` reads
`(t - lookback, t]` for an instant selector and `(t - range, t]` for a range
selector, so a selector's data-select range starts 1 ms after those points,
once per selector (also under `@` and inside subqueries). Cortex's
`isWithinTimeAttributes` floors `now - window - 1m` to the minute and
compares millisecond times; `isWithinTimeRangeAttribute` compares the
millisecond span. Metadata calls match a regex against each `match[]`
selector on its own, and `.*` alone short-circuits for them.
"""

from __future__ import annotations

import math

import pytest

from scheduler_core.classify import query_info
from scheduler_core.cortex_http import parse_forwarded_request
from scheduler_core.model import PriorityDef, QueryAttribute, QueryInfo, QueryPriority, TimeRange
from scheduler_core.priority import match_priority

NOW = 1_700_000_000.0  # not minute-aligned: 1_699_999_980 is
MS = 0.001


def _window_threshold(window: float) -> float:
    """Cortex's start threshold: now - window - 1m, truncated to the minute."""
    return math.floor((NOW - window - 60.0) / 60.0) * 60.0


def _matches(attr: QueryAttribute, info: QueryInfo) -> bool:
    rules = QueryPriority(True, 0, [PriorityDef(5, 0, [attr])])
    return match_priority(rules, info, NOW).priority == 5


def _instant(query: str, at: float) -> QueryInfo:
    return query_info(query=query, api_type="query", start=at, end=at, step=None, headers={})


def _ranged(query: str, start: float, end: float) -> QueryInfo:
    return query_info(
        query=query, api_type="query_range", start=start, end=end, step=60.0, headers={}
    )


HOUR_WINDOW = QueryAttribute(time_window=TimeRange(3600.0, None))
THRESHOLD = _window_threshold(3600.0)


def test_an_instant_selector_does_not_read_the_sample_exactly_one_lookback_back() -> None:
    info = _instant("up", 1000.0)
    assert info.select_start == pytest.approx(1000.0 - 300.0 + MS, abs=1e-9)


def test_an_instant_selector_within_the_window_by_its_excluded_millisecond_matches() -> None:
    # select_start = t - 300 s + 1 ms: at t = threshold + 299.999 s it is the threshold.
    assert _matches(HOUR_WINDOW, _instant("up", THRESHOLD + 299.999))
    assert not _matches(HOUR_WINDOW, _instant("up", THRESHOLD + 299.998))


def test_a_range_selector_starts_one_millisecond_after_t_minus_its_range() -> None:
    assert _matches(HOUR_WINDOW, _instant("rate(up[10m])", THRESHOLD + 599.999))
    assert not _matches(HOUR_WINDOW, _instant("rate(up[10m])", THRESHOLD + 599.998))


def test_an_at_pinned_selector_gets_the_millisecond_once_whatever_the_evaluation_time() -> None:
    pinned = f"up @ {THRESHOLD + 299.999:.3f}"
    assert _matches(HOUR_WINDOW, _instant(pinned, NOW))
    earlier = f"up @ {THRESHOLD + 299.998:.3f}"
    assert not _matches(HOUR_WINDOW, _instant(earlier, NOW))


def test_a_selector_inside_a_subquery_gets_the_millisecond_once_not_per_level() -> None:
    # Subquery range 10m plus the inner selector's lookback, 1 ms late once.
    query = "max_over_time(up[10m:1m])"
    assert _matches(HOUR_WINDOW, _instant(query, THRESHOLD + 899.999))
    assert not _matches(HOUR_WINDOW, _instant(query, THRESHOLD + 899.998))
    nested = "max_over_time(max_over_time(up[5m:])[10m:])"
    assert _matches(HOUR_WINDOW, _instant(nested, THRESHOLD + 1199.999))
    assert not _matches(HOUR_WINDOW, _instant(nested, THRESHOLD + 1199.998))


def test_a_range_selector_inside_a_subquery_uses_its_range_not_the_lookback() -> None:
    query = "max_over_time(rate(up[5m])[10m:])"
    assert _matches(HOUR_WINDOW, _instant(query, THRESHOLD + 899.999))
    assert not _matches(HOUR_WINDOW, _instant(query, THRESHOLD + 899.998))


def test_a_range_query_is_judged_on_its_start_minus_the_selector_range() -> None:
    end = NOW
    assert _matches(HOUR_WINDOW, _ranged("rate(up[5m])", THRESHOLD + 299.999, end))
    assert not _matches(HOUR_WINDOW, _ranged("rate(up[5m])", THRESHOLD + 299.998, end))


def test_the_time_window_end_compares_the_unchanged_end_to_the_millisecond() -> None:
    end_window = QueryAttribute(time_window=TimeRange(None, 3600.0))
    threshold = math.floor((NOW - 3600.0 + 60.0) / 60.0) * 60.0
    assert _matches(end_window, _instant("up", threshold))
    assert not _matches(end_window, _instant("up", threshold + MS))


def test_an_instant_selector_spans_the_lookback_less_one_millisecond() -> None:
    # (t - 5m, t] is 299.999 s wide, so min 5m no longer matches it...
    assert not _matches(
        QueryAttribute(time_range_limit=TimeRange(300.0, None)), _instant("up", NOW)
    )
    assert _matches(QueryAttribute(time_range_limit=TimeRange(299.999, None)), _instant("up", NOW))
    # ...and max 299.999 s does, while max 299.998 s does not.
    assert _matches(QueryAttribute(time_range_limit=TimeRange(None, 299.999)), _instant("up", NOW))
    assert not _matches(
        QueryAttribute(time_range_limit=TimeRange(None, 299.998)), _instant("up", NOW)
    )


def test_a_range_query_spans_its_range_plus_the_selector_range_less_one_millisecond() -> None:
    info = _ranged("rate(up[1h])", NOW - 3600.0, NOW)
    assert _matches(QueryAttribute(time_range_limit=TimeRange(None, 7199.999)), info)
    assert not _matches(QueryAttribute(time_range_limit=TimeRange(None, 7199.998)), info)
    assert _matches(QueryAttribute(time_range_limit=TimeRange(7199.999, None)), info)
    assert not _matches(QueryAttribute(time_range_limit=TimeRange(7200.0, None)), info)


# --- metadata calls: match[] one by one, and `.*` / `.+` on none ---------------


def _series(*selectors: str) -> QueryInfo:
    return query_info(
        query=",".join(selectors),
        api_type="series",
        start=NOW - 3600.0,
        end=NOW,
        step=None,
        headers={},
        matchers=selectors,
    )


def test_a_regex_matches_a_metadata_call_when_it_matches_any_one_selector() -> None:
    info = _series('up{job="a"}', 'process_start_time_seconds{job="b"}')
    assert _matches(QueryAttribute(regex="process_start"), info)
    assert _matches(QueryAttribute(regex='job="a"'), info)


def test_a_regex_that_matches_only_the_joined_selectors_does_not_match() -> None:
    info = _series('up{job="a"}', "process_start_time_seconds")
    assert not _matches(QueryAttribute(regex=r"\},process"), info)
    assert not _matches(QueryAttribute(regex=r'^up\{job="a"\},'), info)


def test_a_metadata_call_without_match_selectors_is_matched_by_dot_star_only() -> None:
    info = _series()
    assert _matches(QueryAttribute(regex=".*"), info)
    assert not _matches(QueryAttribute(regex=".+"), info)
    assert not _matches(QueryAttribute(regex="^$"), info)
    assert not _matches(QueryAttribute(regex="x*"), info)


def test_dot_plus_on_a_metadata_call_must_match_a_selector() -> None:
    assert _matches(QueryAttribute(regex=".+"), _series("up"))


def test_forwarded_match_selectors_stay_apart_even_when_they_contain_commas() -> None:
    url = "/prometheus/api/v1/series?" + "&".join(
        [
            "match%5B%5D=up%7Bjob%3D%22a%22%2Cenv%3D%22b%22%7D",
            "match%5B%5D=process_start_time_seconds",
        ]
    )
    forwarded = parse_forwarded_request("GET", url, [], b"", now=NOW)
    assert forwarded.matchers == ('up{job="a",env="b"}', "process_start_time_seconds")
    assert forwarded.query == 'up{job="a",env="b"},process_start_time_seconds'
    info = query_info(
        query=forwarded.query,
        api_type=forwarded.api_type,
        start=forwarded.start,
        end=forwarded.end,
        step=None,
        headers={},
        matchers=forwarded.matchers,
    )
    # `"b"},process` is in the joined text, in no one selector.
    assert not _matches(QueryAttribute(regex=r'"b"\},process'), info)
    assert _matches(QueryAttribute(regex=r'env="b"\}$'), info)


def test_a_websocket_metadata_call_has_its_one_selector_in_query() -> None:
    info = query_info(
        query='up{job="a"}', api_type="labels", start=None, end=None, step=None, headers={}
    )
    assert _matches(QueryAttribute(regex='job="a"'), info)
    empty = query_info(query="", api_type="labels", start=None, end=None, step=None, headers={})
    assert not _matches(QueryAttribute(regex=".+"), empty)
    assert _matches(QueryAttribute(regex=".*"), empty)
