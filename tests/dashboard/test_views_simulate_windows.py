"""The Simulate page's recent windows carry, from this replica's recorder, when each has a warm-up.

"Proposed starts from" chooses between backlogs built before the window;
with nothing recorded before it both sides start empty, which the page
says before a run (simulate_start_from.js) from each option's
`data-warmup-in`: seconds from the render until recorded time lies before
that window.
"""

from __future__ import annotations

import re

import pytest

from api.wire import runtime_host, traffic_recording
from scheduler_core.traffic_record import TrafficRecorder


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _warmup_in(html: str) -> dict[str, str | None]:
    found = {}
    for option in re.findall(r'<option value="recent:(\d+)"[^>]*>', html):
        found[option] = None
    for seconds, value in re.findall(r'value="recent:(\d+)"[^>]*?data-warmup-in="([^"]+)"', html):
        found[seconds] = value
    return found


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    """A running scheduler whose recorder began at 10_030 s (the minute 10_020)."""
    clock = _Clock(10_030.0)
    recording = TrafficRecorder(clock=clock, wall_clock=clock)
    monkeypatch.setattr(runtime_host, "started", lambda: True)
    monkeypatch.setattr(traffic_recording, "recorder", lambda: recording)
    return clock


def test_each_window_says_how_long_until_time_before_it_was_recorded(viewer_client, recorder):
    recorder.now = 10_030.0 + 600  # ten minutes recorded
    html = viewer_client.get("/simulate/").content.decode()
    # The 5-minute window starts after 10_080, the first whole minute after
    # recording began: a warm-up now. 15 minutes from 10_080 is 10_980;
    # an hour from it (the hour less the warm-up's minute), 13_620.
    assert _warmup_in(html) == {
        "300": "0.000",
        "900": f"{10_980 - recorder.now:.3f}",
        "3600": f"{10_080 + 3540 - recorder.now:.3f}",
    }
    assert 'id="start-from-none"' in html


def test_a_process_without_a_scheduler_says_nothing_it_does_not_know(viewer_client, monkeypatch):
    monkeypatch.setattr(runtime_host, "started", lambda: False)
    html = viewer_client.get("/simulate/").content.decode()
    assert _warmup_in(html) == {"300": None, "900": None, "3600": None}
    assert "data-warmup-in" not in html
