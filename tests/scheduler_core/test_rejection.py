"""Cortex query rejection: rules, validation, and the verdict admission gives."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.classify import query_info
from scheduler_core.errors import ConfigInvalid
from scheduler_core.model import (
    PriorityDef,
    QueryAttribute,
    QueryInfo,
    QueryPriority,
    QueryRejection,
    TenantLimits,
    TimeRange,
)
from scheduler_core.rejection import (
    REJECTION_MESSAGE,
    judge,
    match_rejection,
    rejection_error,
)
from scheduler_core.validation import (
    tenant_limits_from_dict,
    tenant_limits_to_dict,
    validate_tenant_config,
)

NOW = 1_700_000_000.0

CORTEX_EXAMPLE: dict[str, Any] = {
    "query_rejection": {
        "enabled": True,
        "query_attributes": [
            {
                "api_type": "query_range",
                "regex": ".*rate.*",
                "query_step_limit": {"min": "6s", "max": "20m"},
                "dashboard_uid": "dash123",
            }
        ],
    }
}


def _range(query: str, step: float = 15.0, **headers: str) -> QueryInfo:
    return query_info(
        query=query,
        api_type="query_range",
        start=NOW - 3600,
        end=NOW,
        step=step,
        headers=headers,
        now=NOW,
    )


def test_cortexs_documented_example_rejects_exactly_the_matching_dashboard_query() -> None:
    limits = tenant_limits_from_dict(CORTEX_EXAMPLE)
    hit = _range("sum(rate(x[5m]))", 15.0, **{"X-Dashboard-Uid": "dash123"})
    assert judge(limits, hit, NOW).rejected_by == 0
    other_dashboard = _range("sum(rate(x[5m]))", 15.0, **{"X-Dashboard-Uid": "other"})
    assert not judge(limits, other_dashboard, NOW).rejected
    long_step = _range("sum(rate(x[5m]))", 3600.0, **{"X-Dashboard-Uid": "dash123"})
    assert not judge(limits, long_step, NOW).rejected


def test_rejection_is_checked_before_priorities() -> None:
    attr = QueryAttribute(regex="expensive")
    limits = TenantLimits(
        query_priority=QueryPriority(True, 0, [PriorityDef(9, 0, [attr])]),
        query_rejection=QueryRejection(True, [QueryAttribute(regex="nothing"), attr]),
    )
    verdict = judge(limits, _range("expensive_metric"), NOW)
    assert (verdict.rejected_by, verdict.rule_index) == (1, None)


def test_disabled_rejection_keeps_its_rules_without_applying_them() -> None:
    block = {"query_rejection": {**CORTEX_EXAMPLE["query_rejection"], "enabled": False}}
    limits = tenant_limits_from_dict(block)
    assert len(limits.query_rejection.query_attributes) == 1
    hit = _range("rate(x[5m])", 15.0, **{"X-Dashboard-Uid": "dash123"})
    assert judge(limits, hit, NOW).rejected_by is None
    assert tenant_limits_to_dict(limits)["query_rejection"] == block["query_rejection"] | {
        "query_attributes": [
            {
                "regex": ".*rate.*",
                "api_type": "query_range",
                "query_step_limit": {"min": "6s", "max": "20m"},
                "dashboard_uid": "dash123",
            }
        ]
    }


def test_rejection_applies_to_priority_disabled_tenants_too() -> None:
    limits = TenantLimits(query_rejection=QueryRejection(True, [QueryAttribute(regex="x")]))
    verdict = judge(limits, _range("x"), NOW)
    assert verdict.rejected_by == 0


@pytest.mark.parametrize("api_type", ["metadata", "other"])
def test_calls_cortex_never_rejects_are_never_rejected(api_type: str) -> None:
    rules = QueryRejection(True, [QueryAttribute(regex=".*")])
    info = QueryInfo(query="up", api_type=api_type)
    assert match_rejection(rules, info, NOW).attribute_index is None


def test_an_empty_expression_query_is_never_rejected_as_in_cortex() -> None:
    rules = QueryRejection(True, [QueryAttribute(regex=".*")])
    assert match_rejection(rules, _range(""), NOW).attribute_index is None
    assert match_rejection(rules, _range("up"), NOW).attribute_index == 0


def test_series_calls_are_rejected_on_any_one_match_selector() -> None:
    rules = QueryRejection(True, [QueryAttribute(api_type="series", regex="^expensive")])
    info = query_info(
        query="up,expensive_total",
        api_type="series",
        start=NOW - 60,
        end=NOW,
        step=None,
        headers={},
        matchers=("up", "expensive_total"),
    )
    assert match_rejection(rules, info, NOW).attribute_index == 0


def test_the_reason_names_the_tenant_and_the_rule_with_cortexs_text() -> None:
    reason = rejection_error("team-a", 2)
    assert reason.startswith(REJECTION_MESSAGE)
    assert "team-a" in reason and "query_rejection.query_attributes[2]" in reason


def test_validation_gives_every_rejection_error_its_path() -> None:
    errors = validate_tenant_config(
        {
            "query_rejection": {
                "enabled": "yes",
                "query_attributes": [{"regex": "("}, {}, {"time_window": {"start": "soon"}}],
                "extra": 1,
            }
        }
    )
    paths = {e.path for e in errors}
    assert paths >= {
        "query_rejection.enabled",
        "query_rejection.query_attributes[0].regex",
        "query_rejection.query_attributes[1]",
        "query_rejection.query_attributes[2].time_window.start",
        "query_rejection.extra",
    }


def test_a_bad_rejection_block_changes_nothing() -> None:
    with pytest.raises(ConfigInvalid):
        tenant_limits_from_dict({"query_rejection": {"query_attributes": "not a list"}})


def test_a_tenant_without_rejection_rules_exports_as_before() -> None:
    assert "query_rejection" not in tenant_limits_to_dict(TenantLimits())


def test_time_fields_of_a_rejection_attribute_use_the_data_select_range() -> None:
    # Reject anything reading data older than 2 h: rate(x[3h]) does, rate(x[5m]) does not.
    rules = QueryRejection(True, [QueryAttribute(time_range_limit=TimeRange(7200.0, None))])
    instant = query_info(
        query="rate(x[3h])", api_type="query", start=NOW, end=NOW, step=None, headers={}
    )
    assert match_rejection(rules, instant, NOW).attribute_index == 0
    short = query_info(
        query="rate(x[5m])", api_type="query", start=NOW, end=NOW, step=None, headers={}
    )
    assert match_rejection(rules, short, NOW).attribute_index is None
