"""The engine counts a window's waits as the scheduler measures them.

The scheduler measures a wait when a worker takes the request, and a
window's figures (`GET recording/`'s `measured`) are those of the
dispatches made in the window, whenever the requests arrived. A replay
measured by arrival instead (the requests arriving in the window, drained
after its last arrival) counts another set of requests: with a class
starved behind others, the ones the window never served, at their longest
waits. On the demo under a store-gateway slowdown (team-b's range queries
starved by its reserved queriers) that put the replay of the live config
at 34-40 s mean ingester-and-store-gateway wait where the scheduler
measured 14-18 s (`tests.load.whatif_counterfactual`).

One querier with one worker, on the engine's virtual clock, measured from
5 s to 20 s:

    A arrives at 0 (the warm-up), served 0-10
    B arrives at 1 (the warm-up), served 10-11: dispatched in the window
    C arrives at 6, served 11-21
    D arrives at 19, served 21-22: dispatched after the window
"""

from __future__ import annotations

from scheduler_core.model import INGESTER, QueueConfig
from scheduler_core.stats import WaitHistogram
from scheduler_core.whatif import run_whatif
from scheduler_core.whatif_engine import US, EngineInput, run_engine
from scheduler_core.whatif_model import ConfigSet, Knobs
from scheduler_core.whatif_workload import recent_workload

ARRIVALS = (0.0, 1.0, 6.0, 19.0)
SERVICES = (10.0, 1.0, 10.0, 1.0)


def _input(measure_until: float | None) -> EngineInput:
    return EngineInput(
        config=QueueConfig(),
        limits={},
        fleet=[("q-1", 1)],
        times=[round(t * US) for t in ARRIVALS],
        tenants=["t"] * 4,
        components=[INGESTER] * 4,
        priorities=[0] * 4,
        services=[round(s * US) for s in SERVICES],
        measure_from_us=5 * US,
        measure_until_us=None if measure_until is None else round(measure_until * US),
    )


def test_a_window_counts_the_waits_of_the_dispatches_made_in_it() -> None:
    out = run_engine(_input(20.0))
    # B (waited 1 -> 10) and C (6 -> 11); not A, taken before the window
    # began, nor D, taken after it ended.
    assert out.waits_by_priority == {0: [9.0, 5.0]}
    assert out.waits_by_component == {INGESTER: [9.0, 5.0]}
    assert out.waits_by_tenant == {"t": [9.0, 5.0]}
    # What arrived in the window is counted as before: C and D.
    assert (out.enqueued, out.completed) == (2, 2)
    # D was still queued when the window ended: said, as its wait is not counted.
    assert out.waiting_at_end == {0: 1}


def test_without_an_end_every_request_arriving_from_the_start_is_counted_to_the_drain() -> None:
    # A benchmark's run (Mimir's table, the scenarios): C and D, D after 20 s.
    out = run_engine(_input(None))
    assert out.waits_by_priority == {0: [5.0, 2.0]}
    assert out.waiting_at_end is None  # drained to the end: nothing left at a window's end


def _recording() -> dict[str, object]:
    """A 60-s window and its warm-up minute: two arrivals a second, each served in 1 s."""
    sample = {"query": "up", "api_type": "query", "now": 1.7e9, "epoch": -60}
    service = WaitHistogram()
    service.add(1.0)
    return {
        "window_seconds": 60,
        "bucket_seconds": 5,
        "warmup_seconds": 60,
        "keys": [
            {
                "tenant": "t",
                "component": INGESTER,
                "priority": 0,
                "counts": [[offset, 10] for offset in range(-12, 12)],
                "samples": [sample],
            }
        ],
        "service_seconds": {INGESTER: [[-60.0, sorted(service.counts.items())]]},
        "fleet": [["q-1", 1]],
    }


def test_a_recent_replay_measures_its_window_by_dispatch() -> None:
    workload = recent_workload(_recording(), Knobs(), 1)
    assert (workload.measure_from_us, workload.measure_until_us) == (60 * US, 120 * US)
    live = ConfigSet(QueueConfig(), {})
    served = run_whatif(workload, live, live, seed=1)["live"]["by_component"][INGESTER]
    # One worker for twice the arrivals it can serve: the backlog grows from
    # the warm-up's start. The window served about 60 (one a second), the
    # requests of the warm-up's second half and the window's first, which
    # had waited 30 to 60 s. Counted by arrival, it would be the hundred or
    # so the outstanding limit let in during the window, all drained after
    # it (about 80 s mean, 97 s the longest).
    assert 57 <= served["count"] <= 63
    assert 30 < served["mean"] < 60 and served["max"] < 60


def test_a_request_no_worker_ever_takes_is_still_queued_at_the_windows_end() -> None:
    # No querier at all (the REST call refuses an empty fleet; the engine
    # is also the benchmarks'): counted only at dispatch, requests nothing
    # served would read as nothing waiting.
    out = run_engine(
        EngineInput(
            config=QueueConfig(),
            limits={},
            fleet=[],
            times=[1 * US, 2 * US],
            tenants=["t", "t"],
            components=[INGESTER] * 2,
            priorities=[0, 5],
            services=[US, US],
            measure_from_us=0,
            measure_until_us=10 * US,
        )
    )
    assert (out.enqueued, out.left_queued) == (2, 2)
    assert out.waiting_at_end == {0: 1, 5: 1}
