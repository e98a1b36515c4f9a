"""`meant_field`: an unknown name close to a field's is named as its typo."""

from __future__ import annotations

import pytest

from scheduler_core import fields as f
from scheduler_core.errors import FieldError
from scheduler_core.fields import MAX_HINTS, Collector, meant_field, unknown
from scheduler_core.validation import TENANT_KEYS, validate_tenant_config


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("query_priorty", "query_priority"),
        ("Query_Priority", "query_priority"),
        ("queryPriority", "query_priority"),
        ("max_querier_per_tenant", "max_queriers_per_tenant"),
        ("query_rejections", "query_rejection"),
        ("max-queriers-per-tenant", "max_queriers_per_tenant"),
        ("max_query_capacities", "max_query_capacity"),
        ("query_reject", "query_rejection"),
        ("max_outstanding_requests", "max_outstanding_requests_per_tenant"),
    ],
)
def test_a_typo_of_a_tenant_field_names_the_field(typed: str, meant: str) -> None:
    assert meant_field(typed, TENANT_KEYS) == meant


@pytest.mark.parametrize(
    "limit",
    [
        "max_outstanding_per_tenant",
        "max_queriers_per_user",
        "max_query_length",
        "max_query_parallelism",
        "max_query_series",
        "ingestion_rate",
        "max_queriers_per_query",
        "max_fetched_series_per_query",
        "query_sharding_total_shards",
    ],
)
def test_other_cortex_mimir_and_loki_limits_are_no_typo_of_ours(limit: str) -> None:
    assert meant_field(limit, TENANT_KEYS) is None


def test_the_validator_names_the_field_a_nested_typo_meant() -> None:
    errors = validate_tenant_config({"query_priority": {"enable": True}})
    assert [(e.path, e.message) for e in errors] == [
        ("query_priority.enable", "unknown field; did you mean enabled?")
    ]


@pytest.mark.parametrize(("value", "named"), [(None, "null"), (True, "true"), ([1], "a list")])
def test_a_number_or_duration_of_the_wrong_type_is_named_as_json_spells_it(
    value: object, named: str
) -> None:
    errs = f.Collector()
    assert f.number(value, "n", errs) is None
    assert f.duration(value, "d", errs) is None
    assert [e.message for e in errs.errors] == [
        f"must be a finite number, got {named}",
        f"not a duration: {named}",
    ]


def test_past_max_hints_in_one_pass_unknown_fields_are_named_without_a_guess() -> None:
    allowed = ["query_priority", "max_queriers_per_tenant"]
    raw = {f"query_priorit{i}": 1 for i in range(MAX_HINTS + 5)} | {"query_priorty": 1}
    errs = Collector()
    unknown(raw, allowed, "tenants.t", errs)
    assert len(errs.errors) == MAX_HINTS + 6
    assert errs.errors[0] == FieldError(
        "tenants.t.query_priorit0", "unknown field; did you mean query_priority?"
    )
    # The last is a plain typo, but the pass has spent its guesses.
    assert errs.errors[-1] == FieldError("tenants.t.query_priorty", "unknown field")
    assert errs.hints_tried == MAX_HINTS
