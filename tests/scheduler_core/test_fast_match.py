"""The admission path's reason-free matcher decides exactly as the explained one."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.classify import query_info
from scheduler_core.fast_match import attribute_matches, priority_match
from scheduler_core.model import PriorityDef, QueryAttribute, QueryPriority, TimeRange
from scheduler_core.priority import attribute_reasons, match_priority

NOW = 1_700_000_037.5

_DURATIONS = st.sampled_from([None, 0.0, 60.0, 299.999, 300.0, 1800.0, 3600.0, 7200.0])
_PAIRS = st.one_of(st.none(), st.builds(TimeRange, _DURATIONS, _DURATIONS))
_REGEXES = st.sampled_from(
    [None, "", ".*", ".+", "rate", "^up", 'job="a"', "x|y", "(", "a,b", "^$", "errors"]
)


@st.composite
def attributes(draw: Any) -> QueryAttribute:
    return QueryAttribute(
        regex=draw(_REGEXES),
        time_window=draw(_PAIRS),
        api_type=draw(st.sampled_from([None, "", "query", "query_range", "series", "labels"])),
        time_range_limit=draw(_PAIRS),
        query_step_limit=draw(_PAIRS),
        user_agent_regex=draw(st.sampled_from([None, "", "^grafana", ".*", "("])),
        dashboard_uid=draw(st.sampled_from([None, "", "d1"])),
        panel_id=draw(st.sampled_from([None, "", "4"])),
    )


@st.composite
def requests(draw: Any) -> Any:
    api_type = draw(
        st.sampled_from(["query", "query_range", "series", "labels", "metadata", "other"])
    )
    end = NOW - draw(st.sampled_from([0.0, 59.999, 60.0, 1800.0, 3600.0, 7260.0]))
    start = end - draw(st.sampled_from([0.0, 299.999, 300.0, 3600.0]))
    query = draw(st.sampled_from(["", "up", "rate(x[5m])", 'up{job="a"}', "a,b", "errors_total"]))
    matchers = draw(st.sampled_from([None, (), ("up",), ("a", "b"), ('up{job="a"}', "x")]))
    return query_info(
        query=query,
        api_type=api_type,
        start=draw(st.sampled_from([None, start])),
        end=draw(st.sampled_from([None, end])),
        step=draw(st.sampled_from([None, 15.0, 60.0, 3600.0])),
        headers=draw(
            st.sampled_from(
                [{}, {"User-Agent": "grafana/11"}, {"X-Dashboard-Uid": "d1", "X-Panel-Id": "4"}]
            )
        ),
        matchers=matchers,
        now=NOW,
    )


@settings(max_examples=600, deadline=None)
@given(attributes(), requests())
def test_one_attribute_matches_exactly_when_every_explained_check_passes(
    attr: QueryAttribute, info: Any
) -> None:
    explained, _ = attribute_reasons(attr, info, NOW, 0, 0)
    assert attribute_matches(attr, info, NOW) is explained


@settings(max_examples=200, deadline=None)
@given(
    st.booleans(),
    st.integers(-2, 2),
    st.lists(st.lists(attributes(), min_size=1, max_size=3), max_size=3),
    requests(),
)
def test_the_priority_and_the_rule_are_the_explained_ones(
    enabled: bool, default: int, rules: list[list[QueryAttribute]], info: Any
) -> None:
    qp = QueryPriority(enabled, default, [PriorityDef(10 - i, 0, a) for i, a in enumerate(rules)])
    match = match_priority(qp, info, NOW)
    assert priority_match(qp, info, NOW) == (
        match.priority,
        match.rule_index,
        match.attribute_index,
    )
