"""`block_for_cortex`: a stored block as the runtime-config export writes it."""

from __future__ import annotations

from api.store.cortex_export import block_for_cortex

RULE_1_18 = {
    "priority": 1,
    "query_attributes": [
        {"regex": "x", "time_range_limit": {"min": 0, "max": "0s"}, "panel_id": None}
    ],
}


def test_durations_as_numbers_become_strings_and_the_rest_stays_as_written():
    block = {
        "max_queriers_per_tenant": 2,
        "query_priority": {
            "enabled": True,
            "priorities": [
                {
                    "priority": 1,
                    "reserved_queriers": 0.5,
                    "query_attributes": [
                        {"regex": "x", "time_window": {"start": 5400.0, "end": "30m"}}
                    ],
                }
            ],
        },
    }
    out, unreadable = block_for_cortex(block)
    attr = out["query_priority"]["priorities"][0]["query_attributes"][0]
    assert attr == {"regex": "x", "time_window": {"start": "1h30m", "end": "30m"}}
    assert out["query_priority"]["priorities"][0]["reserved_queriers"] == 0.5
    assert unreadable == []
    assert block["query_priority"]["priorities"][0]["query_attributes"][0]["time_window"] == {
        "start": 5400.0,
        "end": "30m",
    }  # the stored block itself is untouched


def test_for_1_17_attribute_fields_that_check_nothing_are_dropped_not_reported():
    out, unreadable = block_for_cortex({"query_priority": {"priorities": [RULE_1_18]}}, (1, 17))
    assert out["query_priority"]["priorities"][0]["query_attributes"] == [{"regex": "x"}]
    assert unreadable == []


def test_for_1_17_a_set_attribute_field_is_reported_by_path():
    rule = {"priority": 1, "query_attributes": [{"regex": "x", "query_step_limit": {"max": 60}}]}
    _, unreadable = block_for_cortex({"query_priority": {"priorities": [rule]}}, (1, 17))
    assert unreadable == ["query_priority.priorities[0].query_attributes[0].query_step_limit"]


def test_a_stored_value_the_rules_now_refuse_is_exported_as_it_is():
    rule = {"priority": 1, "query_attributes": [{"time_window": {"start": -5}}]}
    out, _ = block_for_cortex({"query_priority": {"priorities": [rule]}})
    assert (
        out["query_priority"]["priorities"][0]["query_attributes"][0] == rule["query_attributes"][0]
    )
