"""The classifier's caches: one parse per query text, one QueryInfo per repeated request.

Both are bounded in entries and in the text they keep, and a hit is what a
fresh build gives.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from scheduler_core import classify as module
from scheduler_core.classify import query_info, select_range

T = 1_700_000_000.0
H = 3600.0
LB = 300.0  # default lookback delta
MS = 0.001  # Prometheus 3 reads (t - lookback, t]: every range starts 1 ms late


def test_one_parse_of_a_query_serves_every_time_range_it_is_asked_for() -> None:
    module._cached_spans.cache_clear()
    module._cached_reach.cache_clear()
    query = "sum(rate(cached_metric_total[5m] offset 1h)) and cached_other @ end()"
    first = select_range(query, "query_range", 10_000.0, 20_000.0)
    second = select_range(query, "query_range", 50_000.0, 90_000.0)
    assert module._cached_spans.cache_info().misses == 1
    reach = module._cached_reach.cache_info()
    assert (reach.misses, reach.hits) == (1, 1)
    assert first == (10_000.0 - 3600 - 300 + MS, 20_000.0)
    assert second == (50_000.0 - 3600 - 300 + MS, 90_000.0)


def test_a_query_too_long_to_keep_is_parsed_every_time_and_never_cached() -> None:
    module._cached_spans.cache_clear()
    module._cached_reach.cache_clear()
    # A hundred selectors with long matchers: the text is past the cache's
    # limit (and shallow enough to parse: see selector_spans.MAX_QUERY_NESTING).
    job = "x" * 100
    selectors = [f'long_metric_{i}_total{{job="{job}"}}[5m]' for i in range(100)]
    query = "sum(rate(" + ")) + sum(rate(".join(selectors) + "))"
    assert len(query) > module._CACHED_QUERY_CHARS
    for _ in range(2):
        assert select_range(query, "query_range", 10_000.0, 20_000.0) == (
            10_000.0 - 300 + MS,
            20_000.0,
        )
    assert module._cached_spans.cache_info().currsize == 0
    assert module._cached_reach.cache_info().currsize == 0


def test_a_repeated_request_is_answered_from_the_cache_with_what_a_fresh_build_gives() -> None:
    module._cached_info.cache_clear()
    fields = {"query": "sum(rate(up[5m]))", "api_type": "query_range", "step": 60.0}
    headers = {"User-Agent": "Grafana/11", "X-Loadtest-Id": "1"}
    first = query_info(**fields, start=T - H, end=T, headers=headers)
    again = query_info(**fields, start=T - H, end=T, headers={**headers, "X-Loadtest-Id": "2"})
    assert again is first
    assert module._cached_info.cache_info().hits == 1
    fresh = module._build_info(
        "sum(rate(up[5m]))", "query_range", T - H, T, 60.0, "Grafana/11", "", "", LB
    )
    assert first == fresh
    # Another range, header or lookback is another entry.
    assert query_info(**fields, start=T - 2 * H, end=T, headers=headers).select_start == (
        T - 2 * H - 5 * 60.0 + MS
    )
    assert query_info(**fields, start=T - H, end=T, headers={}).user_agent == ""
    assert module._cached_info.cache_info().misses == 3


def test_an_instant_query_without_a_time_is_evaluated_at_each_now_and_never_kept() -> None:
    module._cached_info.cache_clear()
    first = query_info(
        query="up", api_type="query", start=None, end=None, step=None, headers={}, now=T
    )
    later = query_info(
        query="up", api_type="query", start=None, end=None, step=None, headers={}, now=T + 60
    )
    assert (first.start, later.start) == (T, T + 60)
    assert (first.select_end, later.select_end) == (T, T + 60)
    assert module._cached_info.cache_info().currsize == 0


def test_the_cache_hands_back_the_numbers_it_was_given_int_or_float() -> None:
    as_int = query_info(query="up", api_type="query_range", start=0, end=60, step=15, headers={})
    as_float = query_info(
        query="up", api_type="query_range", start=0.0, end=60.0, step=15.0, headers={}
    )
    assert [type(v) for v in (as_int.start, as_int.step)] == [int, int]
    assert [type(v) for v in (as_float.start, as_float.step)] == [float, float]


def test_long_requests_and_match_selectors_are_built_every_time_never_kept() -> None:
    module._cached_info.cache_clear()
    long_agent = {"User-Agent": "x" * module._CACHED_QUERY_CHARS}
    for _ in range(2):
        assert (
            query_info(
                query="up", api_type="query", start=T, end=T, step=None, headers=long_agent
            ).user_agent
            == long_agent["User-Agent"]
        )
        info = query_info(
            query="",
            api_type="series",
            start=T - H,
            end=T,
            step=None,
            headers={},
            matchers=["up", "down"],
        )
        assert info.matchers == ("up", "down")
    assert module._cached_info.cache_info().currsize == 0


@given(
    headers=st.dictionaries(
        st.sampled_from(["user-agent", "User-Agent", "X-PANEL-ID", "x-dashboard-uid", "other"]),
        st.text(max_size=3),
    )
)
def test_the_client_headers_are_the_first_of_each_name_in_any_case(headers) -> None:
    def first(name: str) -> str:
        return next((v for k, v in headers.items() if k.lower() == name), "")

    assert module.client_headers(headers) == (
        first("user-agent"),
        first("x-dashboard-uid"),
        first("x-panel-id"),
    )
