"""What a `recent` window will hold, known before a run: its span and when a warm-up exists.

The Simulate page offers "Proposed starts from" only when time before the
window was recorded; `TrafficRecorder.extent` says so, and it must agree
with what `capture` then takes, at every instant.
"""

from __future__ import annotations

import pytest

from scheduler_core.traffic_record import TrafficRecorder
from tests.scheduler_core.test_traffic_record import Clock, _request, _serve


def _recorder(began: float) -> tuple[TrafficRecorder, Clock]:
    clock = Clock(began)
    return TrafficRecorder(clock=clock, wall_clock=clock.wall), clock


def test_a_recorder_younger_than_the_window_has_no_warm_up_yet_and_says_when_it_will() -> None:
    recorder, clock = _recorder(10_030.0)  # the minute 10_020 began; 10_080 is the next
    clock.now = 10_030.0 + 600  # ten minutes recorded
    extent = recorder.extent(900)
    # Fifteen minutes after 10_080, the first whole minute after recording
    # began, the window starts there, with recorded time before it.
    assert extent.warmup_in_seconds == pytest.approx(10_080 + 900 - clock.now)
    # From the minute recording began, to the end of the current bucket.
    assert extent.window_seconds == 10_630 - 10_020 + 5
    assert recorder.export(900)["window_seconds"] == extent.window_seconds
    assert recorder.export(900)["warmup_seconds"] == 0


def test_a_window_of_whole_minutes_spans_up_to_a_minute_more_than_asked() -> None:
    recorder, clock = _recorder(1_000.0)
    clock.now = 5_000.0 + 40.0  # 40 s into a minute (5_040 = 84 * 60)
    extent = recorder.extent(300)
    assert extent.warmup_in_seconds == 0
    # From the whole minute at 4_740 to the end of the bucket 5_040-5_045.
    assert extent.window_seconds == 5_045 - 4_740 == 305
    clock.now = 5_040.0 + 35.0
    assert recorder.extent(300).window_seconds == 340


@pytest.mark.parametrize("window", [60, 300, 900, 3600])
def test_the_extent_agrees_with_what_the_capture_takes_at_every_instant(window: int) -> None:
    recorder, clock = _recorder(10_007.0)
    _serve(recorder, clock, _request(0, clock), 0.1)
    seen_none = seen_some = False
    for step in range(0, 4_600, 7):
        clock.now = 10_007.0 + step
        extent = recorder.extent(window)
        recording = recorder.export(window)
        assert recording["window_seconds"] == extent.window_seconds, clock.now
        # The 60-minute window keeps a minute inside the hour for its warm-up,
        # but the whole minute it starts at can take all but a bucket of it.
        if window < 3600:
            assert (recording["warmup_seconds"] > 0) == (extent.warmup_in_seconds == 0), clock.now
        if extent.warmup_in_seconds:
            seen_none = True
            # Said ahead: at that instant (and not a bucket before) there is one.
            later = clock.now + extent.warmup_in_seconds
            clock.now = later
            assert recorder.extent(window).warmup_in_seconds == 0
            clock.now = later - 1
            assert recorder.extent(window).warmup_in_seconds > 0
        else:
            seen_some = True
    assert seen_none and seen_some
