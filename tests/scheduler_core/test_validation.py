"""Tenant-config validation and Prometheus durations: every error, with its path."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.errors import ConfigInvalid, FieldError
from scheduler_core.model import (
    PriorityDef,
    QueryAttribute,
    QueryPriority,
    TenantLimits,
    TimeRange,
)
from scheduler_core.validation import (
    TENANT_KEYS,
    InvalidDuration,
    format_duration,
    parse_duration,
    tenant_limits_from_dict,
    tenant_limits_to_dict,
    validate_tenant_config,
)
from tests.examples import SEED_TENANT_CONFIG

SEED_CONFIG = SEED_TENANT_CONFIG

P0 = "query_priority.priorities[0]"
A0 = f"{P0}.query_attributes[0]"
RX = {"regex": "a"}


def with_attribute(attribute: Any) -> dict[str, Any]:
    return {"query_priority": {"priorities": [{"priority": 1, "query_attributes": [attribute]}]}}


def with_priority(priority: Any) -> dict[str, Any]:
    return {"query_priority": {"priorities": [priority]}}


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2h", 7200.0),
        ("1h30m", 5400.0),
        ("0s", 0.0),
        ("0", 0.0),
        ("0h", 0.0),
        ("1d", 86400.0),
        ("1w", 604800.0),
        ("1y", 31536000.0),
        ("100ms", 0.1),
        ("1d2h3m4s5ms", 93784.005),
        (90, 90.0),
        (1.5, 1.5),
    ],
)
def test_parse_duration_reads_prometheus_strings_and_plain_seconds(
    text: object, seconds: float
) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "bad", ["", "2 h", "h", "-1h", "1.5h", "30m1h", "2hours", True, None, [], math.nan, math.inf]
)
def test_parse_duration_rejects_everything_else(bad: object) -> None:
    with pytest.raises(InvalidDuration):
        parse_duration(bad)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (7200, "2h"),
        (5400, "1h30m"),
        (0, "0s"),
        (86400, "1d"),
        (8 * 86400, "8d"),
        (7 * 86400, "1w"),
        (365 * 86400, "1y"),
        (0.1, "100ms"),
        (90061.5, "1d1h1m1s500ms"),
        (-90, "-1m30s"),
    ],
)
def test_format_duration_prints_the_canonical_prometheus_form(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@settings(derandomize=True)
@given(st.integers(min_value=0, max_value=9_223_372_036_854))  # up to Go's largest duration
def test_format_then_parse_gives_back_the_same_milliseconds(ms: int) -> None:
    text = format_duration(ms / 1000)
    assert round(parse_duration(text) * 1000) == ms
    assert format_duration(parse_duration(text)) == text


def test_the_seed_example_config_is_valid_and_builds_the_expected_limits() -> None:
    assert validate_tenant_config(SEED_CONFIG) == []
    limits = tenant_limits_from_dict(SEED_CONFIG)
    assert limits == TenantLimits(
        max_queriers=0,
        max_outstanding=None,
        query_priority=QueryPriority(
            enabled=True,
            default_priority=0,
            priorities=[
                PriorityDef(3, 1, [QueryAttribute(regex="special_query")]),
                PriorityDef(2, 0, [QueryAttribute(regex="max", time_window=TimeRange(7200.0))]),
                PriorityDef(1, 0, [QueryAttribute(time_window=TimeRange(86400.0))]),
            ],
        ),
    )


def test_an_empty_block_gives_default_limits() -> None:
    assert tenant_limits_from_dict({}) == TenantLimits()
    assert tenant_limits_from_dict({"query_priority": None}) == TenantLimits()


@pytest.mark.parametrize(
    ("raw", "path", "fragment"),
    [
        ({"max_queriers_per_tenant": -1}, "max_queriers_per_tenant", ">= 0"),
        ({"max_queriers_per_tenant": "4"}, "max_queriers_per_tenant", "integer"),
        ({"max_queriers_per_tenant": True}, "max_queriers_per_tenant", "integer"),
        (
            {"max_outstanding_requests_per_tenant": 0},
            "max_outstanding_requests_per_tenant",
            ">= 1",
        ),
        ({"bogus": 1}, "bogus", "unknown field"),
        ({"query_priority": {"enable": True}}, "query_priority.enable", "unknown field"),
        ({"query_priority": {"enabled": "yes"}}, "query_priority.enabled", "true or false"),
        ({"query_priority": {"default_priority": 1.5}}, "query_priority.default_priority", "int"),
        ({"query_priority": []}, "query_priority", "mapping"),
        ({"query_priority": {"priorities": "x"}}, "query_priority.priorities", "list"),
        (with_priority("x"), P0, "mapping"),
        (with_priority({"query_attributes": [{"regex": "a"}]}), f"{P0}.priority", "required"),
        (
            with_priority({"priority": "1", "query_attributes": [{"regex": "a"}]}),
            f"{P0}.priority",
            "integer",
        ),
        (
            with_priority({"priority": 1, "reserved_queriers": -1, "query_attributes": [RX]}),
            f"{P0}.reserved_queriers",
            "negative",
        ),
        (
            with_priority({"priority": 1, "reserved_queriers": "1", "query_attributes": [RX]}),
            f"{P0}.reserved_queriers",
            "number",
        ),
        (with_priority({"priority": 1, "query_attributes": []}), f"{P0}.query_attributes", "empty"),
        (with_priority({"priority": 1}), f"{P0}.query_attributes", "empty"),
        (
            with_priority({"priority": 1, "rules": [], "query_attributes": [RX]}),
            f"{P0}.rules",
            "unknown field",
        ),
        (with_attribute({}), A0, "no field set"),
        (with_attribute({"time_window": {"end": "0h"}}), A0, "no field set"),
        (with_attribute({"regex": ""}), A0, "no field set"),
        (with_attribute("max"), A0, "mapping"),
        (with_attribute({"regexp": "max"}), f"{A0}.regexp", "unknown field"),
        (with_attribute({"regex": "a("}), f"{A0}.regex", "missing ): a("),
        (with_attribute({"regex": "(?<=a)b"}), f"{A0}.regex", "invalid perl operator"),
        (with_attribute({"regex": "x" * 1001}), f"{A0}.regex", "at most 1000"),
        (with_attribute({"regex": 123}), f"{A0}.regex", "string"),
        (with_attribute({"user_agent_regex": "[z-a]"}), f"{A0}.user_agent_regex", "RE2"),
        (
            with_attribute({"time_window": {"start": "1h", "end": "2h"}}),
            f"{A0}.time_window",
            "start (1h) must be greater than end (2h)",
        ),
        (
            with_attribute({"time_window": {"start": "1h", "end": "1h"}}),
            f"{A0}.time_window",
            "greater than end",
        ),
        (
            with_attribute({"time_window": {"start": "2 hours"}}),
            f"{A0}.time_window.start",
            "not a valid duration",
        ),
        (with_attribute({"time_window": {"start": -5}}), f"{A0}.time_window.start", ">= 0"),
        (
            with_attribute({"time_window": {"begin": "1h"}}),
            f"{A0}.time_window.begin",
            "unknown field",
        ),
        (with_attribute({"time_window": "2h"}), f"{A0}.time_window", "mapping"),
        (
            with_attribute({"time_range_limit": {"min": "2h", "max": "1h"}}),
            f"{A0}.time_range_limit",
            "min (2h) must not exceed max (1h)",
        ),
        (
            with_attribute({"query_step_limit": {"min": "2m", "max": "1m"}}),
            f"{A0}.query_step_limit",
            "must not exceed",
        ),
        (with_attribute({"api_type": "instant"}), f"{A0}.api_type", "unknown api_type"),
        (with_attribute({"dashboard_uid": 5}), f"{A0}.dashboard_uid", "string"),
        (with_attribute({"panel_id": True}), f"{A0}.panel_id", "string"),
        (with_attribute({"dashboard_uid": "u" * 4097}), f"{A0}.dashboard_uid", "at most 4096"),
        (with_attribute({"panel_id": "4\n2"}), f"{A0}.panel_id", "U+000A, which no HTTP header"),
        (with_attribute({"dashboard_uid": "a\x00"}), f"{A0}.dashboard_uid", "U+0000"),
        ([], "(root)", "mapping"),
    ],
)
def test_each_kind_of_error_is_reported_at_its_exact_path(
    raw: Any, path: str, fragment: str
) -> None:
    errors = validate_tenant_config(raw)
    assert [e.path for e in errors] == [path], errors
    assert fragment in errors[0].message


def test_a_later_duplicate_priority_is_reported_at_its_own_priority_field() -> None:
    raw = {
        "query_priority": {
            "priorities": [
                {"priority": 3, "query_attributes": [{"regex": "a"}]},
                {"priority": 2, "query_attributes": [{"regex": "b"}]},
                {"priority": 3, "query_attributes": [{"regex": "c"}]},
            ]
        }
    }
    assert validate_tenant_config(raw) == [
        FieldError(
            "query_priority.priorities[2].priority", "duplicate priority 3 (first at priorities[0])"
        )
    ]


def test_more_than_100_priorities_is_an_error() -> None:
    priorities = [{"priority": i, "query_attributes": [{"regex": "a"}]} for i in range(101)]
    errors = validate_tenant_config({"query_priority": {"priorities": priorities}})
    assert [(e.path, e.message) for e in errors] == [
        ("query_priority.priorities", "at most 100 priorities, got 101")
    ]
    assert validate_tenant_config({"query_priority": {"priorities": priorities[:100]}}) == []


def test_more_than_50_attributes_in_one_priority_is_an_error() -> None:
    attributes = [{"regex": f"q{i}"} for i in range(51)]
    errors = validate_tenant_config(with_priority({"priority": 1, "query_attributes": attributes}))
    assert [(e.path, e.message) for e in errors] == [
        (f"{P0}.query_attributes", "at most 50 attributes, got 51")
    ]


def test_every_error_is_returned_at_once() -> None:
    raw = {
        "max_queriers_per_tenant": -2,
        "extra": True,
        "query_priority": {
            "enabled": True,
            "priorities": [
                {
                    "priority": 1,
                    "query_attributes": [
                        {"regex": "a(", "api_type": "nope"},
                        {"time_window": {"start": "1h", "end": "3h"}},
                    ],
                },
                {"priority": 1, "reserved_queriers": -1, "query_attributes": []},
            ],
        },
    }
    assert [e.path for e in validate_tenant_config(raw)] == [
        "extra",
        "max_queriers_per_tenant",
        f"{A0}.regex",
        f"{A0}.api_type",
        f"{P0}.query_attributes[1].time_window",
        "query_priority.priorities[1].reserved_queriers",
        "query_priority.priorities[1].query_attributes",
    ]


def test_building_invalid_limits_raises_with_the_same_errors() -> None:
    raw = with_attribute({"regex": "a(", "api_type": "nope"})
    with pytest.raises(ConfigInvalid) as caught:
        tenant_limits_from_dict(raw)
    assert caught.value.errors == validate_tenant_config(raw)
    assert f"{A0}.regex" in str(caught.value)


def test_a_header_value_may_hold_a_tab_as_http_headers_can() -> None:
    limits = tenant_limits_from_dict(with_attribute({"dashboard_uid": "a\tb"}))
    assert limits.query_priority.priorities[0].query_attributes[0].dashboard_uid == "a\tb"


def test_negative_zero_reserved_queriers_is_read_as_zero() -> None:
    block = with_priority({"priority": 1, "reserved_queriers": -0.0, "query_attributes": [RX]})
    reserved = tenant_limits_from_dict(block).query_priority.priorities[0].reserved_queriers
    assert math.copysign(1.0, reserved) == 1.0


def test_an_unquoted_numeric_panel_id_is_read_as_text() -> None:
    limits = tenant_limits_from_dict(with_attribute({"panel_id": 4}))
    assert limits.query_priority.priorities[0].query_attributes[0].panel_id == "4"


CANONICAL: dict[str, Any] = {
    "max_queriers_per_tenant": 4,
    "max_outstanding_requests_per_tenant": 50,
    "max_query_capacity": 0.5,
    "query_priority": {
        "enabled": True,
        "default_priority": -1,
        "priorities": [
            {
                "priority": 5,
                "reserved_queriers": 0.5,
                "query_attributes": [
                    {
                        "regex": "sum\\(",
                        "time_window": {"start": "1h30m", "end": "5m"},
                        "api_type": "query_range",
                        "time_range_limit": {"min": "1h", "max": "1d"},
                        "query_step_limit": {"min": "15s", "max": "1m"},
                        "user_agent_regex": "^Grafana",
                        "dashboard_uid": "abc",
                        "panel_id": "7",
                    },
                    {"time_range_limit": {"max": "2h"}},
                ],
            },
            {"priority": 2, "reserved_queriers": 2, "query_attributes": [{"api_type": "series"}]},
        ],
    },
    "query_rejection": {
        "enabled": True,
        "query_attributes": [
            {"api_type": "query", "regex": ".*rate.*", "query_step_limit": {"min": "6s"}},
            {"dashboard_uid": "dash123", "panel_id": "4"},
        ],
    },
}


def test_a_canonical_block_round_trips_through_limits_unchanged() -> None:
    assert tenant_limits_to_dict(tenant_limits_from_dict(CANONICAL)) == CANONICAL


def test_the_seed_example_comes_back_in_canonical_form() -> None:
    assert tenant_limits_to_dict(tenant_limits_from_dict(SEED_CONFIG)) == {
        "max_queriers_per_tenant": 0,
        "query_priority": {
            "enabled": True,
            "default_priority": 0,
            "priorities": [
                {
                    "priority": 3,
                    "reserved_queriers": 1,
                    "query_attributes": [{"regex": "special_query"}],
                },
                {
                    "priority": 2,
                    "query_attributes": [{"regex": "max", "time_window": {"start": "2h"}}],
                },
                {"priority": 1, "query_attributes": [{"time_window": {"start": "1d"}}]},
            ],
        },
    }


def test_tenant_keys_name_every_top_level_field_even_unset_ones() -> None:
    assert set(TENANT_KEYS) == set(CANONICAL)
    assert set(tenant_limits_to_dict(TenantLimits())) < set(TENANT_KEYS)


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("abc", "got 'abc'"),
        ("9" * 60, f"got {'9' * 40!r}…"),
        (True, "got true"),
        ([1], "got a list"),
        (1.5, "got 1.5"),
        (float("nan"), "got NaN"),
        (float("inf"), "got Infinity"),
        (float("-inf"), "got -Infinity"),
    ],
)
def test_a_refused_value_is_named_as_the_person_typed_it(value: object, named: str) -> None:
    errors = validate_tenant_config({"max_queriers_per_tenant": value})
    assert [e.message for e in errors] == [f"must be an integer, {named}"]


def test_a_null_is_the_field_unset_on_every_field_as_cortex_reads_it() -> None:
    # Some fields read null as unset and others refused it.
    block = {
        "max_queriers_per_tenant": None,
        "max_outstanding_requests_per_tenant": None,
        "max_query_capacity": None,
        "query_priority": {
            "enabled": True,
            "default_priority": None,
            "priorities": [
                {
                    "priority": 1,
                    "reserved_queriers": None,
                    "query_attributes": [{"regex": "a", "time_window": None, "api_type": None}],
                }
            ],
        },
        "query_rejection": {"enabled": None, "query_attributes": None},
    }
    assert validate_tenant_config(block) == []
    unset = tenant_limits_from_dict(
        {"query_priority": {"enabled": True, "priorities": [
            {"priority": 1, "query_attributes": [{"regex": "a"}]}]}}
    )  # fmt: skip
    assert tenant_limits_from_dict(block) == unset


def test_a_refused_switch_is_named_as_json_spells_it() -> None:
    errors = validate_tenant_config({"query_rejection": {"enabled": "yes"}})
    assert [e.message for e in errors] == ["must be true or false, got 'yes'"]
    errors = validate_tenant_config({"query_priority": {"enabled": 1}})
    assert [e.message for e in errors] == ["must be true or false, got 1"]


@pytest.mark.parametrize(
    ("block", "path"),
    [
        ({"max_querier_per_tenant": None}, "max_querier_per_tenant"),
        ({"query_priority": {"enabld": None}}, "query_priority.enabld"),
        (
            {"query_rejection": {"query_attributes": [{"regex": "x", "regx": None}]}},
            "query_rejection.query_attributes[0].regx",
        ),
    ],
)
def test_a_misspelt_field_set_to_null_is_still_an_unknown_field(
    block: dict[str, Any], path: str
) -> None:
    # Null is "unset" only for a field that exists: the key is checked first.
    assert [(e.path, e.message.split(";")[0]) for e in validate_tenant_config(block)] == [
        (path, "unknown field")
    ]
