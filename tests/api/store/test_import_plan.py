"""`api.store.import_plan`: the copy every tenant write stores holds no -0.0."""

from __future__ import annotations

import math
from typing import Any

from api.store.import_plan import plan_import, stored_copy, validate_tenant


def _positive_zero(value: Any) -> bool:
    return type(value) is float and value == 0 and math.copysign(1, value) == 1


def test_a_stored_copy_turns_negative_zero_into_zero_and_keeps_every_other_value() -> None:
    block = {"a": -0.0, "b": [1, -0.0, {"c": -0.0}], "d": "-0.0", "e": 0, "f": 0.5, "g": None}
    copied = stored_copy(block)
    # A null is the field unset: left out, so no export writes `regex: null`.
    assert copied == {"a": 0.0, "b": [1, 0.0, {"c": 0.0}], "d": "-0.0", "e": 0, "f": 0.5}
    assert _positive_zero(copied["a"]) and _positive_zero(copied["b"][1])
    assert _positive_zero(copied["b"][2]["c"])
    assert type(copied["e"]) is int and copied["d"] == "-0.0"
    assert list(copied) == [k for k in block if block[k] is not None]  # the order as written


def test_a_stored_copy_shares_no_container_with_what_it_copied() -> None:
    block: dict[str, Any] = {"q": {"priorities": [{"priority": 1}]}}
    copied = stored_copy(block)
    copied["q"]["priorities"][0]["priority"] = 2
    copied["q"]["priorities"].append({})
    assert block == {"q": {"priorities": [{"priority": 1}]}}


def test_a_validated_tenant_block_and_an_import_plan_hold_no_negative_zero() -> None:
    block = {"max_query_capacity": -0.0}
    assert _positive_zero(validate_tenant("t", block)["max_query_capacity"])
    plan = plan_import({"t": block}, {})
    assert _positive_zero(plan.overrides["t"]["max_query_capacity"])
    assert math.copysign(1, block["max_query_capacity"]) == -1  # the input is left alone
