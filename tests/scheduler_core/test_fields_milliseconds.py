"""`fields.duration` reads a duration as Cortex holds it: whole milliseconds.

It is the one reader of every rule and setting duration, for a write and for
a stored block loaded at start-up alike, so it rounds rather than refuses:
a block stored before durations were held to the millisecond still loads
(a refused one would run under the default limits).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.model import QueueConfig, TimeRange
from scheduler_core.validation import (
    queue_config_from_dict,
    tenant_limits_from_dict,
    validate_queue_settings,
    validate_tenant_config,
)


def _attribute(**fields: Any) -> dict[str, Any]:
    rule = {"priority": 1, "query_attributes": [fields]}
    return {"query_priority": {"enabled": True, "priorities": [rule]}}


@pytest.mark.parametrize(
    ("written", "read"),
    [(1.0005, 1.001), (1.0004, 1.0), (0.0004, 0.001), ("1s1ms", 1.001), (90, 90.0), (0, None)],
)
def test_a_rule_duration_is_read_to_the_millisecond(written: object, read: float | None) -> None:
    block = _attribute(regex="up", query_step_limit={"max": written})
    attr = tenant_limits_from_dict(block).query_priority.priorities[0].query_attributes[0]
    assert attr.query_step_limit == (None if read is None else TimeRange(None, read))


def test_a_stored_block_with_sub_millisecond_bounds_still_loads_with_every_bound_set() -> None:
    block = _attribute(
        time_window={"start": 0.0004},
        time_range_limit={"min": 0.0001, "max": 0.0004},
        query_step_limit={"min": 0.0004},
    )
    assert validate_tenant_config(block) == []
    attr = tenant_limits_from_dict(block).query_priority.priorities[0].query_attributes[0]
    assert attr.time_window == TimeRange(0.001, None)
    assert attr.time_range_limit == TimeRange(0.001, 0.001)
    assert attr.query_step_limit == TimeRange(0.001, None)


def test_a_positive_setting_under_a_millisecond_loads_as_one_millisecond() -> None:
    raw = {"stuck_threshold": 0.0004, "query_store_after": 0.0002}
    assert validate_queue_settings(raw, QueueConfig()) == []
    config = queue_config_from_dict(raw, QueueConfig())
    assert (config.stuck_threshold_seconds, config.query_store_after) == (0.001, 0.001)
