"""Poison values: every bound Cortex can load, and classification that never raises."""

from __future__ import annotations

import math
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.bounds import (
    INT64_MAX,
    MAX_DURATION_SECONDS,
    MAX_QUERIER_ID_LENGTH,
    MAX_TIMESTAMP,
    MIN_TIMESTAMP,
    parse_decimal,
    querier_id_error,
    quoted,
    request_times_error,
    tenant_id_unsupported,
)
from scheduler_core.classify import classify
from scheduler_core.cortex_http import parse_duration_seconds, parse_prometheus_time
from scheduler_core.durations import InvalidDuration, format_duration, parse_duration
from scheduler_core.model import COMPONENTS, PriorityDef, QueryAttribute, QueryPriority, TimeRange
from scheduler_core.priority import match_priority
from scheduler_core.validation import (
    tenant_limits_from_dict,
    tenant_limits_to_dict,
    validate_queue_settings,
    validate_tenant_config,
)

NOW = 1_700_000_000.0


def attribute(**fields: object) -> dict[str, object]:
    return {"query_priority": {"priorities": [{"priority": 1, "query_attributes": [fields]}]}}


ATTRIBUTE_PATH = "query_priority.priorities[0].query_attributes[0]"


@pytest.mark.parametrize(
    "value",
    ["99999999999999999h", "293y", "2562048h", 1e308, 2**70, 10**30, 10**5000],
    ids=["17-digit-hours", "293y", "2562048h", "1e308", "2**70", "10**30", "10**5000"],
)
def test_a_duration_beyond_go_time_duration_is_refused(value: object) -> None:
    with pytest.raises(InvalidDuration, match="out of range"):
        parse_duration(value)


def test_the_largest_go_duration_is_accepted_and_round_trips() -> None:
    assert parse_duration("2562047h47m16s854ms") == MAX_DURATION_SECONDS
    assert parse_duration(format_duration(MAX_DURATION_SECONDS)) == MAX_DURATION_SECONDS
    assert parse_duration("292y") == 292 * 365 * 86400


@pytest.mark.parametrize("value", [1e308, "99999999999999999h", 2**70, 10**30])
def test_a_time_window_cortex_cannot_load_is_refused_at_its_path(value: object) -> None:
    errors = validate_tenant_config(attribute(time_window={"start": value}))
    assert [e.path for e in errors] == [f"{ATTRIBUTE_PATH}.time_window.start"]
    assert "out of range" in errors[0].message


@pytest.mark.parametrize("key", ["time_range_limit", "query_step_limit"])
def test_limits_beyond_go_time_duration_are_refused_at_their_path(key: str) -> None:
    errors = validate_tenant_config(attribute(**{key: {"max": "999999999y"}}))
    assert [e.path for e in errors] == [f"{ATTRIBUTE_PATH}.{key}.max"]


@pytest.mark.parametrize(
    ("block", "path"),
    [
        ({"max_queriers_per_tenant": 2**70}, "max_queriers_per_tenant"),
        ({"max_outstanding_requests_per_tenant": 10**30}, "max_outstanding_requests_per_tenant"),
        ({"query_priority": {"default_priority": -(2**64)}}, "query_priority.default_priority"),
        (
            {"query_priority": {"priorities": [{"priority": 2**63, "query_attributes": [{}]}]}},
            "query_priority.priorities[0].priority",
        ),
    ],
)
def test_a_count_or_priority_beyond_int64_is_refused_at_its_path(
    block: dict[str, object], path: str
) -> None:
    errors = validate_tenant_config(block)
    assert path in [e.path for e in errors]
    assert "64-bit integer" in next(e.message for e in errors if e.path == path)


@pytest.mark.parametrize("value", [1e300, 2**70, float(2**63)])
def test_reserved_queriers_beyond_int64_are_refused(value: float) -> None:
    block = {
        "query_priority": {
            "priorities": [
                {"priority": 1, "reserved_queriers": value, "query_attributes": [{"regex": "x"}]}
            ]
        }
    }
    errors = validate_tenant_config(block)
    assert [e.path for e in errors] == ["query_priority.priorities[0].reserved_queriers"]


def test_the_int64_edge_itself_is_accepted_and_exported_unchanged() -> None:
    block = {"max_queriers_per_tenant": INT64_MAX, "max_outstanding_requests_per_tenant": 1}
    assert validate_tenant_config(block) == []
    assert tenant_limits_to_dict(tenant_limits_from_dict(block))["max_queriers_per_tenant"] == (
        INT64_MAX
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("querier_forget_delay", 1e308),
        ("priority_aging", "99999999999999999h"),
        ("query_ingesters_within", 10**30),
        ("max_outstanding_requests_per_tenant", 2**70),
    ],
)
def test_scheduler_settings_beyond_cortex_bounds_are_refused_at_their_key(
    key: str, value: object
) -> None:
    assert [e.path for e in validate_queue_settings({key: value})] == [key]


@pytest.mark.parametrize(
    ("start", "end", "step", "field"),
    [
        (-1e308, NOW, None, "start"),
        (NOW, math.inf, None, "end"),
        (math.nan, NOW, None, "start"),
        (1 << 1400, None, None, "start"),
        (MAX_TIMESTAMP + 2, None, None, "start"),
        (NOW, NOW - 1, None, "start"),
        (NOW - 60, NOW, 0, "step"),
        (NOW - 60, NOW, -1, "step"),
        (NOW - 60, NOW, 1e300, "step"),
        (NOW - 60, NOW, math.nan, "step"),
    ],
)
def test_request_times_out_of_bounds_name_their_field(
    start: float, end: float | None, step: float | None, field: str
) -> None:
    problem = request_times_error(start, end, step)
    assert problem is not None and problem.field == field


def test_request_times_at_the_prometheus_edges_are_accepted() -> None:
    assert request_times_error(MIN_TIMESTAMP, MAX_TIMESTAMP, MAX_DURATION_SECONDS) is None
    assert request_times_error(None, None, None) is None


def test_format_duration_is_total_over_floats() -> None:
    assert format_duration(math.inf) == "+Inf"
    assert format_duration(-math.inf) == "-Inf"
    assert format_duration(math.nan) == "NaN"
    assert format_duration(1e308) == "+Inf"  # its milliseconds overflow a float


# Rules that look at every time-dependent field, so matching formats and
# compares whatever a frontend sent.
RULES = QueryPriority(
    enabled=True,
    default_priority=1,
    priorities=[
        PriorityDef(
            5,
            query_attributes=[
                QueryAttribute(time_window=TimeRange(MAX_DURATION_SECONDS, 3600.0)),
                QueryAttribute(time_range_limit=TimeRange(60.0, MAX_DURATION_SECONDS)),
                QueryAttribute(query_step_limit=TimeRange(1.0, MAX_DURATION_SECONDS)),
            ],
        )
    ],
)
TIMES = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([-1e308, 1e308, MIN_TIMESTAMP, MAX_TIMESTAMP, 0.0, NOW]),
)
QUERIES = st.sampled_from(
    [
        "up",
        "rate(x[5m])",
        "x[100000000y]",
        "x offset 100000000y",
        "x offset -100000000y",
        "max_over_time(x[1000000000y:1m])",
        "x @ 1e300",
        "x @ -1e300",
        "x @ start()",
        "",
        "(((",
    ]
)


@settings(max_examples=400, deadline=None)
@given(
    query=QUERIES,
    api_type=st.sampled_from(["query", "query_range", "series", "labels", "metadata", "other"]),
    start=TIMES,
    end=TIMES,
    step=TIMES,
)
def test_classification_and_matching_never_raise_whatever_a_frontend_sends(
    query: str,
    api_type: str,
    start: float | None,
    end: float | None,
    step: float | None,
) -> None:
    found = classify(
        query=query, api_type=api_type, start=start, end=end, step=step, headers={}, now=NOW
    )
    assert found.component in COMPONENTS
    match = match_priority(RULES, found.info, NOW)
    assert match.priority in (1, 5)
    assert all(isinstance(reason.message, str) for reason in match.reasons)


def test_a_range_too_long_for_the_parser_is_classified_as_unknown_not_raised() -> None:
    found = classify(
        query="rate(x[100000000y])",
        api_type="query_range",
        start=NOW - 60,
        end=NOW,
        step=15.0,
        headers={},
        now=NOW,
    )
    assert found.component == "unknown"
    assert found.info.select_start is None


@pytest.mark.parametrize("value", ["1e308", "-1e308", "inf", "NaN", "9223309901257976"])
def test_a_forwarded_time_prometheus_cannot_parse_is_unknown(value: str) -> None:
    assert parse_prometheus_time(value) is None


def test_a_forwarded_time_at_prometheus_max_time_is_kept() -> None:
    assert parse_prometheus_time("9223309901257974") == MAX_TIMESTAMP


@pytest.mark.parametrize("value", ["1e300", "99999999999999999h", "293y", "inf", "nan"])
def test_a_forwarded_step_beyond_go_time_duration_is_unknown(value: str) -> None:
    assert parse_duration_seconds(value) is None


@pytest.mark.parametrize(
    ("text", "signed", "value"),
    [
        ("42", False, 42),
        ("007", False, 7),
        ("-3", True, -3),
        ("+3", True, 3),
        ("-3", False, None),
        ("--3", True, None),
        ("", False, None),
        ("\u00b2", False, None),  # isdigit() says yes; int() refuses it
        ("\u0663", False, None),  # an Arabic-Indic 3: int() would read it
        (" 4", False, None),
        ("9" * 40, False, int("9" * 40)),
        ("9" * 41, False, None),
        ("9" * 5000, True, None),  # int() raises past 4,300 digits
    ],
)
def test_a_decimal_is_ascii_digits_of_bounded_length(
    text: str, signed: bool, value: int | None
) -> None:
    assert parse_decimal(text, signed=signed) == value


_CORTEX_TENANT_CHARACTERS = set(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!-_.*'()"
)


@given(st.text(max_size=40))
def test_tenant_id_characters_are_cortexs_and_each_refused_one_is_named_once(text: str) -> None:
    # Cortex's isSupported, spelled out character by character.
    expected = "".join(sorted({c for c in text if c not in _CORTEX_TENANT_CHARACTERS}))
    assert tenant_id_unsupported(text) == expected


@given(st.text(max_size=300))
def test_a_querier_id_is_refused_exactly_when_empty_too_long_or_holding_a_control_character(
    text: str,
) -> None:
    control = any(unicodedata.category(c) == "Cc" for c in text)
    refused = not text or len(text) > MAX_QUERIER_ID_LENGTH or control
    assert (querier_id_error(text) is not None) == refused


def test_a_host_name_is_a_valid_querier_id() -> None:
    assert querier_id_error("querier-7.cortex.svc.cluster.local") is None


def test_quoted_gives_short_values_whole_and_the_start_and_length_of_long_ones() -> None:
    assert quoted("tenant-a") == "'tenant-a'"
    assert quoted(7) == "7"
    assert quoted("a" * 600) == repr("a" * 512) + "... (600 characters)"
    assert quoted(["x"] * 300, limit=10) == "['x', 'x',... (1500 characters)"
