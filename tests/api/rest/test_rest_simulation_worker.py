"""The simulation worker process: same answer as in-process, progress, cancel, reuse."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from api.rest import simulation
from api.rest.simulation_worker import SimulationJob, run_job
from scheduler_core.whatif import merge_proposed
from scheduler_core.whatif_scenarios import scenario_base
from scheduler_core.whatif_spec import parse_spec


@pytest.fixture(autouse=True)
def _workers(settings: Any) -> Iterator[None]:
    settings.SIMULATION_IN_WORKER_PROCESS = True
    settings.SIMULATION_WORKERS = 1
    yield
    simulation.pool.close()


def _job(duration: float, limit: float = 60.0) -> SimulationJob:
    spec = parse_spec(
        {
            "workload": {"kind": "scenario", "name": "cortex-seed"},
            "knobs": {"duration_seconds": duration},
            "proposed": {"settings": {"layout": "component-first"}},
        }
    )
    base = scenario_base("cortex-seed")
    return SimulationJob(spec, base, merge_proposed(base, spec.settings, {}), limit)


def test_the_worker_process_answers_what_the_in_process_run_answers() -> None:
    job = _job(30)
    run = simulation.runs.start(None, ("user", 1))
    assert run is not None
    outcome = simulation.submit(job, run)
    assert outcome[0] == "done" and run.state == "done" and run.progress == 1.0
    local = run_job(job)
    for body in (outcome[1], local[1]):
        body["workload"].pop("elapsed_seconds")
    assert outcome[1] == local[1]


def test_a_cancelled_run_stops_and_the_worker_serves_the_next_one() -> None:
    run = simulation.runs.start("long-run", ("user", 1))
    assert run is not None
    answer: list[Any] = []
    thread = threading.Thread(target=lambda: answer.append(simulation.submit(_job(3600), run)))
    thread.start()
    # Wait (bounded) until the worker reports progress: the run is under way.
    deadline = time.monotonic() + 60
    while run.progress == 0.0 and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert run.progress > 0.0
    run.cancel.set()
    thread.join(timeout=30)
    assert answer and answer[0][0] == "cancelled" and run.state == "cancelled"
    again = simulation.runs.start(None, ("user", 1))
    assert again is not None
    assert simulation.submit(_job(10), again)[0] == "done"


def test_a_second_run_while_the_only_worker_is_busy_is_refused_at_once() -> None:
    first = simulation.runs.start(None, ("user", 1))
    assert first is not None
    thread = threading.Thread(target=lambda: simulation.submit(_job(3600), first))
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while first.progress == 0.0 and time.monotonic() < deadline:
            time.sleep(0.05)
        second = simulation.runs.start(None, ("user", 2))
        assert second is not None
        with pytest.raises(simulation.SimulationBusy):
            simulation.submit(_job(10), second)
    finally:
        first.cancel.set()
        thread.join(timeout=30)


def test_a_run_over_its_time_limit_answers_timeout() -> None:
    run = simulation.runs.start(None, ("user", 1))
    assert run is not None
    outcome = simulation.submit(_job(3600, limit=0.5), run)
    assert outcome[0] == "timeout" and "time limit of 0.5 s" in outcome[1]
    assert run.state == "failed"
