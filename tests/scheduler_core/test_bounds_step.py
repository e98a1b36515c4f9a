"""`cortex_step_seconds` and the step check of `request_times_error`."""

from __future__ import annotations

import math

import pytest

from scheduler_core.bounds import cortex_step_seconds, request_times_error


@pytest.mark.parametrize(
    ("seconds", "held"),
    [(15, 15.0), (0.9996, 0.999), (1.001, 1.0), (0.0015, 0.001), (0.0005, 0.0), (-0.0005, 0.0)],
)
def test_a_step_is_truncated_to_the_millisecond_as_go_truncates_it(
    seconds: float, held: float
) -> None:
    assert cortex_step_seconds(seconds) == held


@pytest.mark.parametrize("seconds", [1e306, math.inf, -math.inf])
def test_a_step_too_large_to_count_in_milliseconds_is_kept_for_the_range_check(
    seconds: float,
) -> None:
    assert cortex_step_seconds(seconds) == seconds
    problem = request_times_error(None, None, cortex_step_seconds(seconds))
    assert problem is not None and problem.field == "step"


def test_a_step_truncated_to_zero_is_refused_saying_why() -> None:
    problem = request_times_error(None, None, cortex_step_seconds(0.0004))
    assert problem is not None and problem.field == "step"
    assert problem.message == (
        "step must be a positive number of seconds, at least 0.001: "
        "Cortex reads a step to the millisecond"
    )
