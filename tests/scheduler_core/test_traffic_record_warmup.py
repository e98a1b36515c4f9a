"""The warm-up a capture takes: back to where the window's backlog began, at most ten minutes.

A real `RequestQueue` on a fake clock runs as the live scheduler
(`recorded_queue.run_recorded`) for one tenant whose outstanding limit
(600) is reached for good: its priority-2 queries alone take 90% of the
fleet (36 a second of its 40), its priority-0 ones (6 a second) get the
rest, so they queue until the limit, which then refuses 2 a second, and
wait a minute and a half or more. Filling the limit took 300 s, longer
than those waits. A minute of warm-up replays the window with a fifth of
that backlog: few 429s until it fills again, the starved class served
younger (as would three minutes, covering the longest wait alone, for
some seeds). The capture reaches back to where the backlog began (each
minute's waits reach into the one before) and the replay agrees with what
was measured.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from typing import Any

import pytest

from scheduler_core.model import QueueConfig, Request
from scheduler_core.queue import RequestQueue
from scheduler_core.recording import MAX_WARMUP_SECONDS, WARMUP_SECONDS
from scheduler_core.traffic_record import TrafficRecorder
from scheduler_core.validation import tenant_limits_from_dict
from scheduler_core.whatif import run_whatif
from scheduler_core.whatif_model import MAX_REQUESTS, ConfigSet, Knobs
from scheduler_core.whatif_workload import recent_workload
from tests.scheduler_core.recorded_queue import run_recorded
from tests.scheduler_core.test_traffic_record import WINDOWS, Clock, _request
from tests.scheduler_core.whatif_measured import cut_warmup, disagreements

LIMITS = tenant_limits_from_dict(
    {
        "max_outstanding_requests_per_tenant": 600,
        "query_priority": {
            "enabled": True,
            "default_priority": 0,
            "priorities": [{"priority": 2, "query_attributes": [{"regex": "fast"}]}],
        },
    }
)
LIVE = ConfigSet(QueueConfig(), {"t1": LIMITS})
# Per second: (query, priority, arrivals); 4 workers of 0.1 s serve 40.
CLASSES = (("sum(rate(fast[5m]))", 2, 36.0), ("sum(rate(slow[5m]))", 0, 6.0))
# The 429s are a few hundred refusals made at the limit, where a burst more
# or less moves the count most (as `test_whatif_prediction`'s REFUSED_SHARE).
REFUSED_SHARE = 0.35


def _starved(seed: int, seconds: int = 1320) -> dict[str, Any]:
    """`seconds` of the starving load, recorded; the window is the last 5 minutes."""
    rng = random.Random(seed)
    clock = Clock()
    recorder = TrafficRecorder(clock=clock, wall_clock=clock.wall, seed=seed)
    queue = RequestQueue(LIVE.config, clock=clock)
    queue.set_tenant_limits("t1", LIMITS)
    total = sum(rate for _, _, rate in CLASSES)

    def arrivals() -> Iterator[Request]:
        end = clock.now + seconds
        at = clock.now
        n = 0
        while (at := at + rng.expovariate(total)) < end:
            clock.now = at  # the request's wall-clock times are its arrival's
            query, priority, _ = rng.choices(CLASSES, [rate for _, _, rate in CLASSES])[0]
            service = rng.uniform(0.05, 0.15)
            yield _request(
                n, clock, query=query, priority=priority, payload=service, enqueued_at=at
            )
            n += 1

    run_recorded(queue, recorder, clock, arrivals(), workers=4)
    recording = recorder.export(300)
    recording["fleet"] = [["q-1", 4]]
    recording["windows"] = WINDOWS
    return recording


def _replayed(recording: dict[str, Any], seed: int) -> dict[str, Any]:
    body = run_whatif(recent_workload(recording, Knobs(), seed), LIVE, LIVE, seed=seed)
    live: dict[str, Any] = body["live"]
    return live


def _refusals_agree(result: dict[str, Any], measured: dict[str, Any]) -> bool:
    refused: int = result["rejected"]["total"]
    real: int = measured["rejected"]
    return abs(refused - real) <= REFUSED_SHARE * real


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_class_starved_for_minutes_replays_with_the_backlog_it_had(seed: int) -> None:
    recording = _starved(seed)
    measured = recording["measured"]
    starved = measured["by_priority"]["0"]
    # Served after waiting minutes, at its limit for good.
    assert starved["mean"] > WARMUP_SECONDS and measured["rejected"] > 300
    result = _replayed(recording, seed)
    assert disagreements(result, measured) == []
    assert _refusals_agree(result, measured), (result["rejected"], measured["rejected"])
    # Its backlog began long before the window: the capture reached back to the cap.
    assert recording["warmup_seconds"] == MAX_WARMUP_SECONDS


def test_a_minute_of_warm_up_replays_a_starved_class_with_too_little_backlog() -> None:
    recording = _starved(1)
    measured = recording["measured"]
    result = _replayed(cut_warmup(copy.deepcopy(recording), WARMUP_SECONDS), 1)
    assert disagreements(result, measured) != []
    assert result["rejected"]["total"] < 0.5 * measured["rejected"]


def test_a_busy_queue_with_short_waits_warms_up_for_a_minute() -> None:
    clock = Clock()
    recorder = TrafficRecorder(clock=clock, wall_clock=clock.wall)
    for n in range(1200):
        clock.now += 0.5
        request = _request(n, clock)
        recorder.on_enqueued(request)
        recorder.on_dispatched(request, "q-1", 0, 50.0)  # long, yet under a minute
        recorder.on_completed(request)
    assert recorder.export(300)["warmup_seconds"] == WARMUP_SECONDS


def test_the_warm_up_reaches_back_as_far_as_the_waits_measured_in_and_before_the_window() -> None:
    clock = Clock(11_000.0)
    recorder = TrafficRecorder(clock=clock, wall_clock=clock.wall)
    for n, (at, wait) in enumerate([(11_700.0, 1.0), (11_790.0, 150.0), (11_990.0, 200.0)]):
        clock.now = at
        recorder.on_dispatched(_request(n, clock), "q-1", 0, wait)
    clock.now = 12_200.0
    # The window starts at 11_880 (a whole minute, 300 s or more before
    # now). The wait of 200 s dispatched in the minute ending at 12_000
    # began by 11_800, within the minute (ending at 11_820) whose 150 s
    # wait began by 11_670, within the minute of 11_700, whose one second
    # reaches back no further: the backlog began 210 s before the window.
    # With the minute of margin: a warm-up of 270 s.
    assert recorder.export(300)["warmup_seconds"] == 270


def test_a_warm_up_too_long_for_the_bound_is_cut_to_what_fits() -> None:
    recording = _starved(1, seconds=900)
    window = recording["window_seconds"]
    offered = sum(n for key in recording["keys"] for offset, n in key["counts"] if offset >= 0)
    # Arrivals raised until the window and 300 s of its warm-up fill the
    # bound, to a bucket.
    factor = MAX_REQUESTS / (offered / window * (window + 302))
    assert recording["warmup_seconds"] > 300
    workload = recent_workload(recording, Knobs(arrival_factor=factor), 1)
    assert workload.description["warmup_seconds"] == 300
    assert workload.measure_from_us == 300_000_000
