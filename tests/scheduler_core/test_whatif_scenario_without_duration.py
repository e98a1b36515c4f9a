"""mimir-slow-consumer has no duration: asking for one is refused at its field, not ignored."""

from __future__ import annotations

import pytest

from scheduler_core.whatif import SpecInvalid
from scheduler_core.whatif_model import Knobs, WorkloadError
from scheduler_core.whatif_scenarios import NO_DURATION, SCENARIO_KNOBS, scenario_workload
from scheduler_core.whatif_spec import parse_spec, read_spec

MIMIR = {"kind": "scenario", "name": "mimir-slow-consumer"}


def test_a_duration_for_mimir_slow_consumer_is_refused_at_knobs_duration_seconds() -> None:
    with pytest.raises(SpecInvalid) as refused:
        parse_spec({"workload": MIMIR, "knobs": {"duration_seconds": 5}})
    assert [(e.path, e.message) for e in refused.value.errors] == [
        ("knobs.duration_seconds", NO_DURATION)
    ]
    assert "has no duration" in NO_DURATION


def test_it_is_listed_beside_the_requests_other_errors() -> None:
    _, found = read_spec({"workload": MIMIR, "knobs": {"duration_seconds": 5, "queriers": 0}})
    assert sorted(e.path for e in found) == ["knobs.duration_seconds", "knobs.queriers"]


def test_null_is_no_duration_and_other_workloads_keep_theirs() -> None:
    assert parse_spec({"workload": MIMIR, "knobs": {"duration_seconds": None}}).knobs == Knobs()
    seed = {"kind": "scenario", "name": "cortex-seed"}
    assert parse_spec({"workload": seed, "knobs": {"duration_seconds": 5}}).knobs.duration_seconds
    recent = {"kind": "recent", "window_seconds": 60}
    assert parse_spec({"workload": recent, "knobs": {"duration_seconds": 5}}).knobs.duration_seconds


def test_the_scenario_itself_refuses_a_duration_it_cannot_honour() -> None:
    with pytest.raises(WorkloadError) as refused:
        scenario_workload("mimir-slow-consumer", Knobs(duration_seconds=5.0), seed=1)
    assert refused.value.path == "knobs.duration_seconds"


def test_each_scenario_says_what_a_blank_duration_and_queriers_mean() -> None:
    for name, (duration, queriers) in SCENARIO_KNOBS.items():
        described = scenario_workload(name, Knobs(), seed=1).description
        assert described["duration_seconds"] == duration
        assert described["queriers"] == queriers
