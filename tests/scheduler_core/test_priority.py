"""Cortex query-priority matching, on a fixed clock: rules, regexes, headers.

The time fields (windows, range and step limits) are in test_priority_time.py.
"""

from __future__ import annotations

import pytest

from scheduler_core.model import (
    PriorityDef,
    QueryAttribute,
    QueryInfo,
    QueryPriority,
    TimeRange,
)
from scheduler_core.priority import RuleReason, match_priority
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

SEED = QueryPriority(
    enabled=True,
    default_priority=0,
    priorities=[
        PriorityDef(3, 1, [QueryAttribute(regex="special_query")]),
        PriorityDef(2, 0, [QueryAttribute(regex="max", time_window=TimeRange(2 * H, 0))]),
        PriorityDef(1, 0, [QueryAttribute(time_window=TimeRange(24 * H))]),
    ],
)


@pytest.mark.parametrize(
    ("info", "priority", "rule"),
    [
        (instant("sum(special_query_total)"), 3, 0),
        (instant("special_query", ago=30 * 24 * H), 3, 0),
        (instant("max(up)"), 2, 1),
        (instant("max(up)", ago=1 * H), 2, 1),
        (instant("max(up)", ago=3 * H), 1, 2),
        (instant("sum(up)"), 1, 2),
        (instant("sum(up)", ago=23 * H), 1, 2),
        (instant("max(up)", ago=25 * H), 0, None),
        (ranged("max(up)", NOW - 90 * M, NOW), 2, 1),
        (ranged("max(up)", NOW - 6 * H, NOW), 1, 2),
        (ranged("max(up)", NOW - 48 * H, NOW), 0, None),
    ],
)
def test_the_seed_config_gives_cortex_priorities(
    info: QueryInfo, priority: int, rule: int | None
) -> None:
    result = match_priority(SEED, info, NOW)
    assert (result.priority, result.rule_index) == (priority, rule)
    assert SEED.priority_for(info, NOW) == priority


def test_disabled_priority_gives_zero_even_when_a_rule_would_match() -> None:
    qp = QueryPriority(False, 7, SEED.priorities)
    result = match_priority(qp, instant("special_query"), NOW)
    assert (result.priority, result.source, result.rule_index) == (0, "disabled", None)
    assert messages(result) == ["query priority is disabled: priority 0"]


def test_no_matching_rule_gives_the_default_priority() -> None:
    qp = QueryPriority(True, 4, [PriorityDef(9, 0, [QueryAttribute(regex="nope")])])
    result = match_priority(qp, instant("up"), NOW)
    assert (result.priority, result.source, result.rule_index) == (4, "default", None)
    assert result.reasons[-1] == RuleReason(
        None, None, "default_priority", True, "no priority matched: default priority 4"
    )


def test_an_enabled_config_with_no_priorities_gives_the_default() -> None:
    assert match_priority(QueryPriority(True, -2), instant("up"), NOW).priority == -2


def test_the_first_matching_priority_in_config_order_wins_not_the_highest() -> None:
    qp = QueryPriority(
        True,
        0,
        [
            PriorityDef(1, 0, [QueryAttribute(regex="up")]),
            PriorityDef(9, 0, [QueryAttribute(regex="up")]),
        ],
    )
    result = match_priority(qp, instant("up"), NOW)
    assert (result.priority, result.rule_index, result.attribute_index) == (1, 0, 0)


def test_any_one_matching_attribute_is_enough_for_its_priority() -> None:
    qp = QueryPriority(
        True,
        0,
        [PriorityDef(6, 0, [QueryAttribute(regex="nope"), QueryAttribute(regex="up")])],
    )
    result = match_priority(qp, instant("up"), NOW)
    assert (result.priority, result.rule_index, result.attribute_index) == (6, 0, 1)


def test_rules_after_the_winner_are_not_evaluated() -> None:
    qp = QueryPriority(
        True,
        0,
        [
            PriorityDef(2, 0, [QueryAttribute(regex="up")]),
            PriorityDef(1, 0, [QueryAttribute(regex="up")]),
        ],
    )
    assert {r.rule_index for r in match_priority(qp, instant("up"), NOW).reasons} == {0}


def test_an_attribute_with_no_field_set_matches_nothing() -> None:
    result = match_priority(one(QueryAttribute(), default=1), instant(""), NOW)
    assert (result.priority, result.source) == (1, "default")
    assert "no field set, so the attribute matches nothing" in messages(result)


def test_a_priority_with_no_attributes_matches_nothing() -> None:
    qp = QueryPriority(True, 1, [PriorityDef(5, 0, [])])
    result = match_priority(qp, instant("up"), NOW)
    assert result.priority == 1
    assert "priority has no query_attributes, so it matches nothing" in messages(result)


@pytest.mark.parametrize("pattern", [".*", ".+"])
@pytest.mark.parametrize("query", ["", "up", "sum(rate(x[5m]))"])
def test_match_all_regexes_match_every_query_even_an_empty_one(pattern: str, query: str) -> None:
    assert matches(QueryAttribute(regex=pattern), instant(query))


@pytest.mark.parametrize(
    ("pattern", "query", "expected"),
    [
        ("max", "sum(max(up))", True),
        ("^max", "sum(max(up))", False),
        ("^max", "max(up)", True),
        ("up\\)$", "max(up)", True),
        ("(?i)MAX", "max(up)", True),
        ("MAX", "max(up)", False),
        ("rate\\(.*\\[5m\\]", "sum(rate(x[5m]))", True),
        ("special_query", "up", False),
    ],
)
def test_regexes_are_unanchored_re2_searches_over_the_query(
    pattern: str, query: str, expected: bool
) -> None:
    assert matches(QueryAttribute(regex=pattern), instant(query)) is expected


def test_a_regex_that_does_not_compile_matches_nothing_and_says_why() -> None:
    result = match_priority(one(QueryAttribute(regex="a("), default=1), instant("a("), NOW)
    assert result.priority == 1
    assert any("does not compile (missing ): a()" in m for m in messages(result))


def test_a_failed_regex_explains_itself() -> None:
    result = match_priority(one(QueryAttribute(regex="max")), instant("sum(up)"), NOW)
    assert "regex 'max' not found in query" in messages(result)


@pytest.mark.parametrize(
    ("wanted", "api_type", "expected"),
    [("query", "query", True), ("query", "query_range", False), ("series", "series", True)],
)
def test_api_type_must_equal_the_request_api_type(
    wanted: str, api_type: str, expected: bool
) -> None:
    info = QueryInfo(query="up", api_type=api_type)
    assert matches(QueryAttribute(api_type=wanted), info) is expected


def test_api_type_mismatch_is_explained() -> None:
    result = match_priority(one(QueryAttribute(api_type="query")), ranged("up", NOW - H, NOW), NOW)
    assert "api_type is query_range, wants query" in messages(result)


@pytest.mark.parametrize(
    ("pattern", "agent", "expected"),
    [
        ("^Grafana", "Grafana/10.2.0", True),
        ("Grafana", "curl/8.0 (via Grafana)", True),
        ("^Grafana", "curl/8.0", False),
        (".*", "", True),
        (".+", "", False),
    ],
)
def test_user_agent_regex_searches_the_user_agent_header(
    pattern: str, agent: str, expected: bool
) -> None:
    info = instant("up", user_agent=agent)
    assert matches(QueryAttribute(user_agent_regex=pattern), info) is expected


@pytest.mark.parametrize(
    ("attr", "expected"),
    [
        (QueryAttribute(dashboard_uid="abc"), True),
        (QueryAttribute(dashboard_uid="ab"), False),
        (QueryAttribute(panel_id="7"), True),
        (QueryAttribute(panel_id="70"), False),
        (QueryAttribute(dashboard_uid="abc", panel_id="7"), True),
        (QueryAttribute(dashboard_uid="abc", panel_id="8"), False),
    ],
)
def test_dashboard_and_panel_must_equal_the_headers_exactly(
    attr: QueryAttribute, expected: bool
) -> None:
    info = instant("up", dashboard_uid="abc", panel_id="7")
    assert matches(attr, info) is expected


def test_a_missing_header_is_explained_as_absent() -> None:
    result = match_priority(one(QueryAttribute(dashboard_uid="abc")), instant("up"), NOW)
    assert "dashboard_uid is absent, wants 'abc'" in messages(result)


def test_every_set_field_must_match_and_all_failures_are_listed() -> None:
    attr = QueryAttribute(regex="max", api_type="query_range", panel_id="3")
    result = match_priority(one(attr), instant("max(up)", panel_id="4"), NOW)
    assert result.source == "default"
    assert [(r.field, r.matched) for r in result.reasons[:-1]] == [
        ("api_type", False),
        ("regex", True),
        ("panel_id", False),
    ]


def test_metadata_requests_match_regexes_against_their_selectors() -> None:
    attr = QueryAttribute(regex='job="api"')
    assert matches(attr, series('up{job="api"}', NOW - H, NOW))
    assert not matches(attr, series('up{job="db"}', NOW - H, NOW))
    assert not matches(attr, series("", NOW - H, NOW))
    assert matches(QueryAttribute(regex=".*"), series("", NOW - H, NOW))


def test_metadata_requests_ignore_dashboard_panel_and_step_like_cortex() -> None:
    info = series("up", NOW - H, NOW, dashboard_uid="x", panel_id="1")
    assert not matches(QueryAttribute(dashboard_uid="other"), info)
    assert matches(QueryAttribute(api_type="series", dashboard_uid="other"), info)
    assert matches(
        QueryAttribute(api_type="series", panel_id="9", query_step_limit=TimeRange(1 * H)), info
    )
