"""Cortex query-priority matching on time: windows, range and step limits.

Cortex floors each threshold to the minute and allows one minute of slack;
metadata calls are measured by their own range.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from scheduler_core.model import QueryAttribute, QueryInfo, TimeRange
from scheduler_core.priority import match_priority
from tests.scheduler_core.priority_matching import (
    NOW,
    H,
    M,
    instant,
    matches,
    messages,
    one,
    ranged,
    series,
)


def window_start_threshold(start: float) -> float:
    # Cortex: now - start - 1m, truncated to the minute.
    return math.floor((NOW - start - M) / M) * M


def window_end_threshold(end: float) -> float:
    return math.floor((NOW - end + M) / M) * M


@pytest.mark.parametrize(
    ("select_start", "expected"),
    [
        (window_start_threshold(2 * H), True),
        (window_start_threshold(2 * H) - 0.001, False),
        (NOW - 2 * H, True),
        (NOW - 2 * H - 60, True),
        (NOW - 2 * H - 61 - (NOW % 60), False),
        (NOW, True),
    ],
)
def test_time_window_start_allows_one_minute_of_slack_floored_to_the_minute(
    select_start: float, expected: bool
) -> None:
    info = QueryInfo(query="up", select_start=select_start, select_end=NOW)
    assert matches(QueryAttribute(time_window=TimeRange(2 * H)), info) is expected


@pytest.mark.parametrize(
    ("select_end", "expected"),
    [
        (window_end_threshold(1 * H), True),
        (window_end_threshold(1 * H) + 0.001, False),
        (NOW - 1 * H, True),
        (NOW - 2 * H, True),
        (NOW, False),
    ],
)
def test_time_window_end_wants_all_data_older_than_now_minus_end_with_slack(
    select_end: float, expected: bool
) -> None:
    info = QueryInfo(query="up", select_start=NOW - 30 * H, select_end=select_end)
    assert matches(QueryAttribute(time_window=TimeRange(None, 1 * H)), info) is expected


def test_time_window_with_both_sides_needs_both() -> None:
    attr = QueryAttribute(time_window=TimeRange(24 * H, 12 * H))
    inside = QueryInfo(select_start=NOW - 20 * H, select_end=NOW - 13 * H)
    too_new = QueryInfo(select_start=NOW - 20 * H, select_end=NOW - 1 * H)
    too_old = QueryInfo(select_start=NOW - 30 * H, select_end=NOW - 13 * H)
    assert [matches(attr, i) for i in (inside, too_new, too_old)] == [True, False, False]


def test_a_time_window_never_matches_when_the_select_range_is_unknown() -> None:
    result = match_priority(
        one(QueryAttribute(time_window=TimeRange(2 * H))), QueryInfo(query="up"), NOW
    )
    assert result.source == "default"
    assert "time_window.start: data-select range unknown" in messages(result)


def test_a_zero_time_window_is_not_set() -> None:
    attr = QueryAttribute(regex="up", time_window=TimeRange(0, 0))
    assert matches(attr, QueryInfo(query="up"))


def test_time_window_reasons_say_how_old_the_data_is() -> None:
    result = match_priority(
        one(QueryAttribute(time_window=TimeRange(2 * H))), instant("max(up)", ago=3 * H), NOW
    )
    assert "time_window.start: data from 3h5m ago is older than now-2h" in messages(result)


def test_negative_durations_count_as_their_absolute_value_like_cortex() -> None:
    attr = QueryAttribute(time_window=TimeRange(-2 * H))
    assert matches(attr, instant("up", ago=1 * H))
    assert not matches(attr, instant("up", ago=3 * H))


@pytest.mark.parametrize(
    ("limit", "info", "expected"),
    [
        # Expression queries are measured by their data-select range, so an
        # instant query over a plain selector spans the 5m lookback.
        (TimeRange(None, 10 * M), instant("up"), True),
        (TimeRange(10 * M), instant("up"), False),
        (TimeRange(30 * M, 2 * H), ranged("up", NOW - H, NOW), True),
        (TimeRange(None, 1 * H), ranged("up", NOW - H, NOW), False),
        (TimeRange(None, 65 * M), ranged("up", NOW - H, NOW), True),
        (TimeRange(2 * H), ranged("up", NOW - H, NOW), False),
        (TimeRange(M), QueryInfo(query="up"), False),
    ],
)
def test_time_range_limit_bounds_the_length_of_the_selected_range(
    limit: TimeRange, info: QueryInfo, expected: bool
) -> None:
    assert matches(QueryAttribute(time_range_limit=limit), info) is expected


@pytest.mark.parametrize(
    ("limit", "step", "expected"),
    [
        (TimeRange(30, 120), 60.0, True),
        (TimeRange(30, 120), 300.0, False),
        (TimeRange(30, 120), 15.0, False),
        (TimeRange(60, 60), 60.0, True),
        (TimeRange(None, 120), 1.0, True),
        (TimeRange(30), None, False),
    ],
)
def test_query_step_limit_bounds_the_step_of_range_queries(
    limit: TimeRange, step: float | None, expected: bool
) -> None:
    info = replace(ranged("up", NOW - H, NOW), step=step)
    assert matches(QueryAttribute(query_step_limit=limit), info) is expected


def test_query_step_limit_is_ignored_for_instant_queries() -> None:
    only_step = QueryAttribute(query_step_limit=TimeRange(1 * H))
    result = match_priority(one(only_step), instant("up"), NOW)
    assert result.source == "default"
    assert "no field that is set applies to query requests, so it matches nothing" in messages(
        result
    )
    with_regex = QueryAttribute(regex="up", query_step_limit=TimeRange(1 * H))
    assert matches(with_regex, instant("up"))


def test_metadata_requests_use_their_own_range_for_windows_and_limits() -> None:
    recent = series("up", NOW - H, NOW)
    old = series("up", NOW - 30 * H, NOW)
    assert matches(QueryAttribute(time_window=TimeRange(2 * H)), recent)
    assert not matches(QueryAttribute(time_window=TimeRange(2 * H)), old)
    assert matches(QueryAttribute(time_range_limit=TimeRange(None, 2 * H)), recent)
    assert not matches(QueryAttribute(time_range_limit=TimeRange(None, 2 * H)), old)
    assert not matches(QueryAttribute(time_window=TimeRange(2 * H)), series("up", None, None))
