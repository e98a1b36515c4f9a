"""The what-if request body: every problem at once, null tenant blocks, and huge numbers."""

from __future__ import annotations

import pytest

from scheduler_core.whatif import SpecInvalid
from scheduler_core.whatif_spec import parse_spec, read_spec

SEED = {"kind": "scenario", "name": "cortex-seed"}


def _no_spaces(tenant_id: str) -> list[str]:
    return ["no spaces"] if " " in tenant_id else []


def test_a_bad_tenant_id_is_named_beside_every_other_problem_of_the_body() -> None:
    spec, found = read_spec(
        {
            "workload": SEED,
            "proposed": {"tenants": {"a b": {"max_queriers_per_tenant": -1}, "c d": "x"}},
            "knobs": {"queriers": 0},
        },
        _no_spaces,
    )
    assert sorted((e.prefix, e.path, e.message) for e in found) == [
        ((), "knobs.queriers", "must be >= 1 and <= 1000, got 0"),
        (("proposed", "tenants", "a b"), "", "no spaces"),
        (("proposed", "tenants", "c d"), "", "must be a tenant block (a mapping) or null, got 'x'"),
        (("proposed", "tenants", "c d"), "", "no spaces"),
    ]
    # The bad-ID tenant's block is kept, for the validator to judge in the same answer.
    assert spec.tenants == {"a b": {"max_queriers_per_tenant": -1}}


def test_a_null_tenant_block_reads_as_that_tenants_override_removed() -> None:
    spec = parse_spec({"workload": SEED, "proposed": {"tenants": {"tenant-1": None}}})
    assert spec.tenants == {"tenant-1": None}


def test_a_body_that_is_no_mapping_is_refused_at_its_root_with_a_spec_of_no_kind() -> None:
    spec, found = read_spec(["workload"])
    assert spec.kind == ""
    assert [(e.prefix, e.path, e.message) for e in found] == [
        ((), "(root)", "must be a mapping, got a list")
    ]


def test_a_huge_integer_is_refused_by_its_size_not_spelled_out() -> None:
    with pytest.raises(SpecInvalid) as refused:
        parse_spec({"workload": SEED, "knobs": {"duration_seconds": 10**400}, "seed": 2**64})
    messages = {e.path: e.message for e in refused.value.errors}
    assert messages["knobs.duration_seconds"] == (
        "must be > 0 and <= 3600, got an integer of more than 38 digits"
    )
    assert messages["seed"] == "must be >= 0 and <= 9223372036854775807, got 18446744073709551616"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (float("nan"), "must be a finite number, got nan"),
        (float("inf"), "must be a finite number, got inf"),
        (-5, "must be > 0 and <= 3600, got -5"),
        ("5m", "must be a number, got '5m'"),
        ([5], "must be a number, got a list"),
        (True, "must be a number, got true"),
    ],
)
def test_a_duration_that_is_no_positive_finite_number_is_refused_at_its_knob(
    value: object, message: str
) -> None:
    with pytest.raises(SpecInvalid) as refused:
        parse_spec({"workload": SEED, "knobs": {"duration_seconds": value}})
    assert [(e.path, e.message) for e in refused.value.errors] == [
        ("knobs.duration_seconds", message)
    ]
