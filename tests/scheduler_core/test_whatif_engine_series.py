"""The queue-length series runs from the start to the run's end, however long the run.

The engine samples the queue on a grid and keeps at most `_MAX_SAMPLES`
points. It used to stop sampling at the cap: a scenario with no duration
is sampled every 10 ms, so `mimir-slow-consumer` with store-gateway 1000x
slower (a 600 s run) charted only its first 49.99 s, and the page read that
last sample, 874 still queued, as "the last request done at 49.99s, 874
never served". Reaching the cap now doubles the stride and keeps every
other point, so the grid stays even, and the end is always the last point.

Every assertion is on virtual time, exact for its inputs.
"""

from __future__ import annotations

import pytest

from scheduler_core import whatif_engine
from scheduler_core.model import INGESTER, QueueConfig
from scheduler_core.whatif import run_whatif
from scheduler_core.whatif_engine import _MAX_SAMPLES, US, EngineInput, run_engine
from scheduler_core.whatif_model import Knobs
from scheduler_core.whatif_scenarios import scenario_base, scenario_workload

SLOW = {"store-gateway": 1000.0, "ingester-and-store-gateway": 1000.0}


def _even(times: list[float]) -> float:
    """The grid's one stride (every point but the end), asserting there is one."""
    grid = times[:-1]
    strides = {round(b - a, 6) for a, b in zip(grid, grid[1:], strict=False)}
    assert len(strides) == 1, sorted(strides)[:5]
    return strides.pop()


def test_a_long_scenario_is_charted_to_its_makespan_and_ends_with_its_end() -> None:
    base = scenario_base("mimir-slow-consumer")
    workload = scenario_workload("mimir-slow-consumer", Knobs(service_factor=SLOW), 1)
    answer = run_whatif(workload, base, base, seed=1)
    for side in ("live", "proposed"):
        result = answer[side]
        t, length = result["series"]["t"], result["series"]["queue_length"]
        assert result["makespan_seconds"] > 500  # the run lasts ten minutes
        assert len(t) == len(length) <= _MAX_SAMPLES
        assert t[0] == 0.0
        assert t[-1] == round(result["makespan_seconds"], 3)
        # The end is the end's own sample: what the run left queued.
        assert length[-1] == result["requests"]["left_queued"] == 0
        assert t[-2] <= t[-1] < t[-2] + _even(t)


def _one_worker_backlog(measure_from: float, sample_every: float) -> EngineInput:
    """One worker; A arrives at 0 and is served 1000 s, B arrives at 1 and waits for it."""
    return EngineInput(
        config=QueueConfig(),
        limits={},
        fleet=[("q-1", 1)],
        times=[0, 1 * US],
        tenants=["t", "t"],
        components=[INGESTER] * 2,
        priorities=[0, 0],
        services=[1000 * US, 1 * US],
        measure_from_us=round(measure_from * US),
        sample_every_us=round(sample_every * US),
    )


@pytest.mark.parametrize("measure_from", [0.0, 0.5])
def test_each_point_kept_is_the_queue_at_its_instant_on_an_even_grid(measure_from: float) -> None:
    # 10 ms over 1001 s is 100,100 grid instants: the stride doubles five times.
    out = run_engine(_one_worker_backlog(measure_from, 0.01))
    samples = out.queue_length
    assert len(samples) <= _MAX_SAMPLES
    times = [t for t, _ in samples]
    stride = _even(times)
    assert stride == pytest.approx(0.01 * 2**5)
    assert times[0] == 0.0
    # Measured from `measure_from`: the grid's instants and the end are its.
    assert out.makespan == pytest.approx(1001 - measure_from)
    assert samples[-1] == (pytest.approx(out.makespan), 0)
    for t, queued in samples[:-1]:
        at = t + measure_from
        # B is queued from 1 s until A is done at 1000 s; then nothing is.
        # A grid instant is sampled before the events at that instant.
        assert queued == (1 if 1 <= at <= 1000 else 0), (t, queued)


def test_a_lower_cap_keeps_the_first_instants_of_each_coarser_grid(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(whatif_engine, "_MAX_SAMPLES", 9)
    out = run_engine(_one_worker_backlog(0.0, 100.0))
    # 100 s over 1001 s is 11 instants: at the 9th point the stride doubles
    # (0, 200, 400, 600, then 800 and 1000 on the new grid), then the end.
    # At 1000 s A is not yet done: an instant is sampled before its events.
    assert [t for t, _ in out.queue_length] == [0.0, 200.0, 400.0, 600.0, 800.0, 1000.0, 1001.0]
    assert [n for _, n in out.queue_length] == [0, 1, 1, 1, 1, 1, 0]


def test_a_run_with_nothing_to_sample_still_ends_with_its_end() -> None:
    out = run_engine(
        EngineInput(
            config=QueueConfig(),
            limits={},
            fleet=[("q-1", 1)],
            times=[],
            tenants=[],
            components=[],
            priorities=[],
            services=[],
            sample_every_us=US,
        )
    )
    assert out.queue_length == [(0.0, 0)]
