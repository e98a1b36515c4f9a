"""`to_milliseconds` and `duration_text_ms`: durations as Cortex holds them, to the millisecond."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.durations import (
    InvalidDuration,
    duration_text_ms,
    format_duration,
    parse_duration,
    to_milliseconds,
)


@pytest.mark.parametrize(
    ("seconds", "held"),
    [
        (1.0005, 1.001),  # round() of the float times 1000 gives 1000 (half to even)
        (1.0004, 1.0),
        (1.0025, 1.003),  # 1.0025 * 1000 is 1002.5 in binary, round() gives 1002
        (2.0005, 2.001),
        (90.5, 90.5),
        (3600, 3600.0),
        (0, 0.0),
        (0.0, 0.0),
    ],
)
def test_a_number_of_seconds_is_held_to_the_nearest_millisecond_halves_up(
    seconds: float, held: float
) -> None:
    assert to_milliseconds(seconds) == held


@pytest.mark.parametrize("seconds", [0.0004, 0.0001, 1e-9, 5e-324])
def test_a_nonzero_duration_under_half_a_millisecond_is_one_millisecond_not_zero(
    seconds: float,
) -> None:
    assert to_milliseconds(seconds) == 0.001
    assert to_milliseconds(-seconds) == -0.001


@pytest.mark.parametrize(
    ("text", "ms"),
    [("1s1ms", 1001), ("1m3ms", 60_003), ("5ms", 5), ("0", 0), ("1d2h3m4s5ms", 93_784_005)],
)
def test_a_duration_string_is_counted_in_exact_milliseconds(text: str, ms: int) -> None:
    assert duration_text_ms(text) == ms


@pytest.mark.parametrize("text", ["", "1s1m", "1.5s", "99999999999999999999h", "2562048h"])
def test_a_duration_string_that_is_not_one_or_out_of_range_is_refused(text: str) -> None:
    with pytest.raises(InvalidDuration):
        duration_text_ms(text)


@settings(derandomize=True)
@given(st.integers(min_value=0, max_value=9_223_372_036_854))  # up to Go's largest duration
def test_a_spelt_duration_is_the_same_float_as_its_number_of_seconds(ms: int) -> None:
    # "1s1ms" and 1.001 must hold the same value, or a bound would compare
    # differently depending on how the operator spelt it.
    assert parse_duration(format_duration(ms / 1000)) == to_milliseconds(ms / 1000) == ms / 1000
