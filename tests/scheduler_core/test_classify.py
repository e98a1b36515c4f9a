"""Data-select ranges from PromQL and Mimir's query components."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.classify import (
    Classification,
    classify,
    component_for,
    parses,
    query_info,
    select_pair,
    select_range,
)
from scheduler_core.model import BOTH, INGESTER, STORE_GATEWAY, UNKNOWN, QueryInfo, QueueConfig
from scheduler_core.selector_spans import ms, parse_spans

T = 1_700_000_000.0  # evaluation time of instant queries, and "now"
H = 3600.0
M = 60.0
D = 86400.0
LB = 5 * M  # default lookback delta
MS = 0.001  # Prometheus 3 reads (t - lookback, t]: every range starts 1 ms late


def _read(low: float, high: float) -> object:
    """The select range Prometheus 3 reads for a selector span [low, high]."""
    return pytest.approx((low + MS, high), abs=1e-6)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("up", (T - LB, T)),
        ('up{job="api"}', (T - LB, T)),
        ("rate(up[1h])", (T - H, T)),
        ("rate(up[1m])", (T - M, T)),
        ("up offset 1h", (T - H - LB, T - H)),
        ("up offset -1h", (T + H - LB, T + H)),
        ("rate(up[10m] offset 1d)", (T - D - 10 * M, T - D)),
        ("up @ 1000", (1000 - LB, 1000.0)),
        ("up @ 1000 offset 100s", (1000 - 100 - LB, 900.0)),
        ("rate(up[1m] @ 2000)", (2000 - M, 2000.0)),
        ("max_over_time(up[1h:1m])", (T - H - LB, T)),
        ("max_over_time(up[1h:])", (T - H - LB, T)),
        ("max_over_time(up[1h:1m] offset 30m)", (T - 30 * M - H - LB, T - 30 * M)),
        ("max_over_time(rate(up[5m])[1h:1m])", (T - H - 5 * M, T)),
        (
            "max_over_time(max_over_time(up[10m:1m] offset 5m)[1h:1m] offset 1h)",
            (T - 65 * M - 70 * M - LB, T - 65 * M),
        ),
        ("max_over_time(up[10m:] @ 5000)", (5000 - 10 * M - LB, 5000.0)),
        ("max_over_time(max_over_time(up[10m:])[1h:] @ 5000)", (5000 - 70 * M - LB, 5000.0)),
        (
            "max_over_time(max_over_time(up[10m:] @ 5000)[1h:] offset 1h)",
            (5000 - 10 * M - LB, 5000.0),
        ),
        ("max_over_time((up @ 3000)[1h:] offset 1h)", (3000 - LB, 3000.0)),
        ("sum(rate(a[1m])) / sum(b offset 1d)", (T - D - LB, T)),
        ("a or b offset 2h", (T - 2 * H - LB, T)),
        ("-up offset 1h", (T - H - LB, T - H)),
        ("(up offset 1h)", (T - H - LB, T - H)),
        ("topk(3, up offset 1d)", (T - D - LB, T - D)),
        ("topk(scalar(a offset 2d), b)", (T - 2 * D - LB, T)),
        ('label_replace(up offset 1h, "a", "$1", "b", "(.*)")', (T - H - LB, T - H)),
        ("histogram_quantile(0.9, rate(x[5m] offset 10m))", (T - 15 * M, T - 10 * M)),
        ("up @ start()", (T - LB, T)),
    ],
)
def test_instant_query_select_ranges_follow_prometheus(
    query: str, expected: tuple[float, float]
) -> None:
    assert select_range(query, "query", T, T) == _read(*expected)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("up", (T - 6 * H - LB, T)),
        ("rate(up[1h])", (T - 7 * H, T)),
        ("up offset 1d", (T - 6 * H - D - LB, T - D)),
        ("up @ start()", (T - 6 * H - LB, T - 6 * H)),
        ("up @ end()", (T - LB, T)),
        ("up @ end() offset 1h", (T - H - LB, T - H)),
        ("max_over_time(up[1h:] @ start())", (T - 7 * H - LB, T - 6 * H)),
        ("max_over_time((up @ end())[1h:] @ start())", (T - LB, T)),
        ("max_over_time(up[2h:1m])", (T - 8 * H - LB, T)),
    ],
)
def test_range_query_select_ranges_span_the_whole_evaluation_range(
    query: str, expected: tuple[float, float]
) -> None:
    assert select_range(query, "query_range", T - 6 * H, T) == _read(*expected)


def test_the_lookback_delta_is_configurable() -> None:
    assert select_range("up", "query", T, T, lookback_delta=60.0) == _read(T - 60, T)
    assert select_range("rate(up[1h])", "query", T, T, lookback_delta=60.0) == _read(T - H, T)


def test_an_instant_query_may_give_its_time_as_start_or_end() -> None:
    assert select_range("up", "query", T, None) == _read(T - LB, T)
    assert select_range("up", "query", None, T) == _read(T - LB, T)
    assert select_range("up", "query", None, None) is None


def test_a_range_query_needs_both_ends() -> None:
    assert select_range("up", "query_range", T - H, None) is None
    assert select_range("up", "query_range", None, T) is None


@pytest.mark.parametrize(
    "query",
    [
        "",
        "up{",
        "sum(",
        "not promql at all ~",
        "vector(1)",
        "1 + 1",
        '"text"',
        "time()",
        "up @ -100",
        "up @ 1e12",
    ],
)
def test_unparseable_or_selector_free_queries_have_no_select_range(query: str) -> None:
    assert select_range(query, "query", T, T) is None
    assert (
        classify(
            query=query,
            api_type="query",
            start=T,
            end=T,
            step=None,
            headers={},
            now=T,
        ).component
        == UNKNOWN
    )


@pytest.mark.parametrize("api_type", ["series", "labels", "label_values", "metadata"])
def test_metadata_calls_read_exactly_their_own_range_without_parsing(api_type: str) -> None:
    assert select_range('up{job="a"},{__name__=~"x.*"}', api_type, T - H, T) == (T - H, T)
    assert select_range("", api_type, T - H, T) == (T - H, T)
    assert select_range("", api_type, None, T) is None


def test_other_api_calls_have_no_select_range() -> None:
    assert select_range("up", "other", T - H, T) is None


@settings(derandomize=True, max_examples=300)
@given(st.text(alphabet="up{}[]()@:-+*/ offsetmhd0123456789.,=~\"'sumrate_", max_size=40))
def test_select_range_never_raises_on_arbitrary_text(query: str) -> None:
    result = select_range(query, "query_range", T - H, T)
    assert result is None or result[0] <= result[1]


QIW = 13 * H
QSA = 12 * H


@pytest.mark.parametrize(
    ("select", "expected"),
    [
        (None, UNKNOWN),
        ((T - H, T), INGESTER),
        ((T - QSA, T), INGESTER),
        ((T - QSA - 0.001, T), BOTH),
        ((T - 2 * D, T), BOTH),
        ((T - 2 * D, T - QIW), STORE_GATEWAY),
        ((T - 2 * D, T - QIW + 0.001), BOTH),
        ((T - 2 * D, T - D), STORE_GATEWAY),
        ((T - 12.5 * H, T - 12.5 * H), BOTH),
        ((T + H, T + 2 * H), INGESTER),
    ],
)
def test_components_follow_mimirs_boundaries(
    select: tuple[float, float] | None, expected: str
) -> None:
    assert component_for(select, T, QIW, QSA) == expected


def test_a_zero_window_never_skips_its_component() -> None:
    assert component_for((T - 10 * D, T - 9 * D), T, 0.0, QSA) == BOTH
    assert component_for((T - M, T), T, QIW, 0.0) == BOTH


def test_component_defaults_are_mimirs_13h_and_12h() -> None:
    assert component_for((T - 12 * H, T), T) == INGESTER
    assert component_for((T - D, T - 13 * H), T) == STORE_GATEWAY


def test_a_range_starting_12h30m_ago_needs_both_under_the_default_windows() -> None:
    # Only a range between the two windows tells 13h/12h from 12h/13h:
    # swapped defaults would skip the store and call this ingester-only.
    recent = (T - 12.5 * H, T)
    assert component_for(recent, T) == BOTH
    found = classify(
        query="", api_type="labels", start=recent[0], end=recent[1], step=None, headers={}, now=T
    )
    assert found.component == BOTH
    config = QueueConfig()
    assert component_for(recent, T, config.query_ingesters_within, config.query_store_after) == BOTH
    assert component_for((T - D, T - 12.5 * H), T) == BOTH


def test_query_info_reads_headers_case_insensitively() -> None:
    info = query_info(
        query="up",
        api_type="query_range",
        start=T - H,
        end=T,
        step=30.0,
        headers={"user-agent": "Grafana/11", "X-DASHBOARD-UID": "d1", "x-panel-id": "12"},
    )
    assert info == QueryInfo(
        query="up",
        api_type="query_range",
        start=T - H,
        end=T,
        step=30.0,
        select_start=T - H - LB + MS,
        select_end=T,
        user_agent="Grafana/11",
        dashboard_uid="d1",
        panel_id="12",
    )


def test_query_info_without_headers_leaves_them_empty() -> None:
    info = query_info(query="up", api_type="query", start=T, end=T, step=None, headers={})
    assert (info.user_agent, info.dashboard_uid, info.panel_id) == ("", "", "")


def test_an_instant_query_without_a_time_is_evaluated_at_now() -> None:
    result = classify(
        query="rate(up[1h])",
        api_type="query",
        start=None,
        end=None,
        step=None,
        headers={},
        now=T,
        query_ingesters_within=QIW,
        query_store_after=QSA,
    )
    assert result == Classification(
        INGESTER,
        QueryInfo(
            query="rate(up[1h])",
            api_type="query",
            start=T,
            end=T,
            select_start=T - H + MS,
            select_end=T,
        ),
    )


@pytest.mark.parametrize(
    ("query", "api_type", "start", "end", "expected"),
    [
        ("up", "query", T, T, INGESTER),
        ("up offset 2d", "query", T, T, STORE_GATEWAY),
        ("rate(up[1d])", "query", T, T, BOTH),
        ("up", "query_range", T - 30 * D, T - 20 * D, STORE_GATEWAY),
        ("up", "query_range", T - 30 * D, T, BOTH),
        ("max_over_time(up[20h:])", "query", T, T, BOTH),
        ("up @ 1000", "query", T, T, STORE_GATEWAY),
        ("anything", "labels", T - H, T, INGESTER),
        ("anything", "series", T - 3 * D, T - 2 * D, STORE_GATEWAY),
        ("anything", "labels", None, None, UNKNOWN),
        ("up", "other", T, T, UNKNOWN),
    ],
)
def test_classify_puts_requests_on_the_component_their_data_lives_on(
    query: str, api_type: str, start: float | None, end: float | None, expected: str
) -> None:
    result = classify(
        query=query,
        api_type=api_type,
        start=start,
        end=end,
        step=None,
        headers={},
        now=T,
        query_ingesters_within=QIW,
        query_store_after=QSA,
    )
    assert result.component == expected


def test_a_select_pair_needs_both_ends_of_the_range() -> None:
    assert select_pair(QueryInfo(select_start=1.0, select_end=2.0)) == (1.0, 2.0)
    assert select_pair(QueryInfo(select_start=1.0)) is None
    assert select_pair(QueryInfo(select_end=2.0)) is None


@pytest.mark.parametrize(
    ("query", "readable"),
    [
        ("up", True),
        ("sum(rate(x[5m]))", True),
        ("sum(rate(foo[5m]", False),
        ("x[100000000y]", False),
    ],
)
def test_parses_says_whether_classification_can_read_the_query(query: str, readable: bool) -> None:
    assert parses(query) is readable


def _walked(query: str, start: float, end: float, lookback: float) -> tuple[float, float] | None:
    """The select range by a walk over every selector's span: what the fold must equal."""
    spans = parse_spans(query)
    if not spans:
        return None
    times = {"eval": (ms(start), ms(end)), "start": (ms(start),) * 2, "end": (ms(end),) * 2}
    lows, highs = [], []
    for span in spans:
        low, high = times.get(span.anchor, (span.at, span.at))
        lows.append(low - span.before_start - (ms(lookback) if span.lookback else 0) + 1)
        highs.append(high - span.before_end)
    return min(lows) / 1000.0, max(highs) / 1000.0


_PIECES = st.sampled_from(
    [
        "up",
        "rate(up[5m])",
        "up offset 1h",
        "up @ start()",
        "up @ end()",
        "up @ 1000",
        "max_over_time(up[1h:1m])",
        "max_over_time((up @ end())[2h:] @ start())",
        "rate(x[90s] offset -10m)",
        "up @ 5000 offset 1d",
    ]
)


@settings(derandomize=True, max_examples=300)
@given(
    pieces=st.lists(_PIECES, min_size=1, max_size=5),
    start=st.integers(min_value=0, max_value=10**7),
    length=st.sampled_from([0, 1, 59_999, 21_600_000]),
    lookback=st.sampled_from([0.001, 60.0, 300.0, 86_400.5]),
    api_type=st.sampled_from(["query", "query_range"]),
)
def test_the_reach_folded_once_per_query_reads_what_a_walk_over_its_selectors_reads(
    pieces: list[str], start: int, length: int, lookback: float, api_type: str
) -> None:
    query = " + ".join(pieces)
    first = start / 1000.0
    last = first if api_type == "query" else (start + length) / 1000.0
    assert select_range(query, api_type, first, last, lookback) == _walked(
        query, first, last, lookback
    )
