"""`parse_duration_seconds`: a step spelt as a duration is counted as Go counts it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.cortex_http import parse_duration_seconds
from scheduler_core.durations import format_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    # Summed as float seconds and truncated, "1s1ms" was 1 s and "1s3ms" 1.002 s.
    [("1s1ms", 1.001), ("1s3ms", 1.003), ("1m3ms", 60.003), ("5ms", 0.005), ("1h1ms", 3600.001)],
)
def test_a_duration_step_keeps_its_every_millisecond(text: str, seconds: float) -> None:
    assert parse_duration_seconds(text) == seconds


@settings(derandomize=True)
@given(st.integers(min_value=1, max_value=9_223_372_036_854))  # up to Go's largest duration
def test_every_duration_step_reads_back_to_its_milliseconds(ms: int) -> None:
    assert parse_duration_seconds(format_duration(ms / 1000)) == ms / 1000


@pytest.mark.parametrize("text", ["2562048h", "99999999999999999999s", "1s1m", "1.5s"])
def test_a_duration_step_beyond_go_or_out_of_order_is_unknown(text: str) -> None:
    assert parse_duration_seconds(text) is None
