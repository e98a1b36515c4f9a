"""The export writes a duration as the scheduler reads and matches it: to the millisecond.

Cortex reads a bound as a `model.Duration`, whose text has no unit below
the millisecond; a bound stored as a number of seconds must mean there what
it means here, so the exported block, read back, gives the same limits and
the same priority for every step.
"""

from __future__ import annotations

from typing import Any

import pytest

from api.store.cortex_export import block_for_cortex
from scheduler_core.durations import duration_text_ms
from scheduler_core.model import QueryInfo, TenantLimits
from scheduler_core.validation import tenant_limits_from_dict

NOW = 1_700_000_000.0


def _block(step_limit: dict[str, Any]) -> dict[str, Any]:
    attr = {"regex": "up", "query_step_limit": step_limit}
    rule = {"priority": 7, "query_attributes": [attr]}
    return {"query_priority": {"enabled": True, "priorities": [rule]}}


def _priority(limits: TenantLimits, step: float) -> int:
    info = QueryInfo(query="up", api_type="query_range", start=NOW - 60, end=NOW, step=step)
    return limits.query_priority.priority_for(info, NOW)


@pytest.mark.parametrize(
    ("stored", "exported"),
    [
        (0.0004, "1ms"),  # was "0s": the bound set here, unset in Cortex
        (0.0005, "1ms"),
        (1.0005, "1s1ms"),  # was "1s", half to even
        (1.0004, "1s"),
        (1.0025, "1s3ms"),
        (90.5, "1m30s500ms"),
    ],
)
def test_a_bound_is_exported_as_the_milliseconds_the_scheduler_matches(
    stored: float, exported: str
) -> None:
    block = _block({"max": stored})
    out, _ = block_for_cortex(block)
    assert out["query_priority"]["priorities"][0]["query_attributes"][0]["query_step_limit"] == {
        "max": exported
    }
    here, there = tenant_limits_from_dict(block), tenant_limits_from_dict(out)
    assert here == there
    bound_ms = duration_text_ms(exported)  # what Cortex reads the text as
    assert _priority(here, bound_ms / 1000) == 7
    assert _priority(here, (bound_ms + 1) / 1000) == 0


def test_a_sub_millisecond_maximum_still_matches_a_one_millisecond_step() -> None:
    # Read as 0.0004 it matched no step at all (every step is at least 1ms),
    # while the "0s" exported for it matched every step in Cortex.
    limits = tenant_limits_from_dict(_block({"max": 0.0004}))
    assert _priority(limits, 0.001) == 7
    assert _priority(limits, 0.002) == 0
