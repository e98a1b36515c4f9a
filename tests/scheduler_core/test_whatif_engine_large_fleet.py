"""A small shard in a large fleet costs the shard per arrival, not the fleet, and dispatches alike.

The runtime's dispatch pass offers the queue to every waiting worker in
turn. Run as written on a virtual clock, a tenant sharded onto 4 of 1000
queriers (4 workers each) that has more traffic than its shard serves made
each of its arrivals ask some 4000 idle workers that may never take it:
the cortex-seed scenario at 1.5x ran into the 60 s limit (503), where the
same run on 4 queriers takes a second. The engine's pass now asks a
querier once per (tenant, priority) it refuses; these tests count the
dequeues it asks of the queue, and hold its dispatches (order, waits,
who served, the queue's series) to the pass as written
(`_OFFER_TO_EVERY_WAITER`) on fleets small enough for both.

Every assertion is on virtual time or counts, exact for a seed, never on
wall time.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import scheduler_core.whatif as whatif
from scheduler_core import whatif_engine
from scheduler_core.model import INGESTER, QueueConfig
from scheduler_core.queue import RequestQueue
from scheduler_core.stats import WaitHistogram
from scheduler_core.whatif import merge_proposed, run_whatif
from scheduler_core.whatif_engine import (
    _CHECK_EVERY,
    EngineInput,
    EngineResult,
    SimulationCancelled,
    run_engine,
)
from scheduler_core.whatif_model import START_FROM_LIVE, ConfigSet, Knobs, Workload
from scheduler_core.whatif_scenarios import SEED_TENANT_CONFIG, scenario_base, scenario_workload
from scheduler_core.whatif_workload import recent_workload
from tests.scheduler_core.whatif_measured import configs_of, load_recording

QWQP = {"layout": "component-first", "component_selection": "querier-worker-priority"}
ROUND_ROBIN = {"layout": "component-first", "component_selection": "round-robin"}


class Budget(Exception):
    """More dequeues were asked than the test allows."""


@pytest.fixture
def dequeues(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts every `RequestQueue.dequeue` ([count, budget]; over the budget raises `Budget`)."""
    counted = [0, 10**12]
    real = RequestQueue.dequeue

    def counting(self: RequestQueue, *args: Any, **kwargs: Any) -> Any:
        counted[0] += 1
        if counted[0] > counted[1]:
            raise Budget(f"more than {counted[1]} dequeues")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(RequestQueue, "dequeue", counting)
    yield counted


def _sharded_seed(queriers: int, shard: int = 4) -> tuple[Workload, ConfigSet, ConfigSet]:
    """The cortex-seed at 1.5x on `queriers`, proposing tenant-1 on `shard` of them."""
    base = scenario_base("cortex-seed")
    block = {**copy.deepcopy(SEED_TENANT_CONFIG), "max_queriers_per_tenant": shard}
    proposed = merge_proposed(base, {}, {"tenant-1": block})
    workload = scenario_workload("cortex-seed", Knobs(queriers=queriers, arrival_factor=1.5), 1)
    return workload, base, proposed


def test_a_small_shard_in_a_large_fleet_asks_about_one_dequeue_per_request(
    dequeues: list[int],
) -> None:
    workload, base, proposed = _sharded_seed(1000)
    arrivals = len(workload.times)
    # Asked as the runtime's pass is written, this is tens of millions (each
    # of the shard's queued arrivals asked of ~4000 idle workers): the
    # budget stops it within the first few hundred arrivals.
    dequeues[1] = 3 * arrivals
    runs: list[EngineResult] = []

    def kept(run: EngineInput, **kwargs: Any) -> EngineResult:
        out = run_engine(run, **kwargs)
        runs.append(out)
        return out

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(whatif, "run_engine", kept)
        answer = run_whatif(workload, base, proposed, seed=1)
    assert answer["workload"]["workers"] == 4000
    live, shard = runs
    # One dequeue per request taken, plus each idle querier's one refusal
    # of each (tenant, priority) it may not take.
    assert shard.dequeue_attempts - shard.enqueued < 4 * 1000
    assert live.dequeue_attempts + shard.dequeue_attempts == dequeues[0]
    # Only the shard served tenant-1, and drained it; the queue refused the rest.
    assert 0 < len(shard.served_by) <= 4
    assert shard.completed == shard.enqueued and shard.left_queued == 0
    assert answer["proposed"]["rejected"]["too_many_outstanding"] > 0


def test_a_stop_is_seen_within_a_check_of_work_however_many_workers_wait(
    dequeues: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The pass as written: thousands of dequeues per arrival. The cancel
    # check used to come every 4096 events, here millions of dequeues.
    monkeypatch.setattr(whatif_engine, "_OFFER_TO_EVERY_WAITER", True)
    workload, base, proposed = _sharded_seed(1000)
    asked: list[int] = []

    def stop() -> bool:
        asked.append(dequeues[0])
        return True

    with pytest.raises(SimulationCancelled):
        run_whatif(workload, proposed, proposed, seed=1, should_stop=stop)
    # Looked at after one check's worth of work and at most one pass over
    # every worker (4000) beyond it.
    assert asked == [pytest.approx(_CHECK_EVERY, abs=4000)]


def _engine_runs(
    run: Callable[[], Any], monkeypatch: pytest.MonkeyPatch, every_waiter: bool
) -> tuple[list[dict[str, Any]], Any]:
    """Each engine run's whole result, with its dispatch log, and the answer."""
    monkeypatch.setattr(whatif_engine, "_OFFER_TO_EVERY_WAITER", every_waiter)
    runs: list[dict[str, Any]] = []

    def logged(engine_input: EngineInput, **kwargs: Any) -> EngineResult:
        engine_input.keep_log = True
        out = run_engine(engine_input, **kwargs)
        runs.append(dataclasses.asdict(out))
        return out

    monkeypatch.setattr(whatif, "run_engine", logged)
    return runs, run()


def _same_dispatches(run: Callable[[], Any], monkeypatch: pytest.MonkeyPatch) -> None:
    fast, answer = _engine_runs(run, monkeypatch, every_waiter=False)
    slow, reference = _engine_runs(run, monkeypatch, every_waiter=True)
    assert answer == reference
    assert len(fast) == len(slow) == 2
    for mine, theirs in zip(fast, slow, strict=True):
        assert mine["dequeue_attempts"] <= theirs["dequeue_attempts"]
        mine["dequeue_attempts"] = theirs["dequeue_attempts"] = 0
        assert mine == theirs
        assert mine["log"]  # something was dispatched to compare


def _scenario(settings: dict[str, str], block: dict[str, Any], queriers: int) -> Callable[[], Any]:
    def run() -> Any:
        base = scenario_base("cortex-seed")
        proposed = merge_proposed(base, settings, {"tenant-1": block})
        knobs = Knobs(queriers=queriers, arrival_factor=1.5, duration_seconds=60.0)
        return run_whatif(scenario_workload("cortex-seed", knobs, 7), base, proposed, seed=7)

    return run


SHARDED = {**copy.deepcopy(SEED_TENANT_CONFIG), "max_queriers_per_tenant": 3}
RESERVED = copy.deepcopy(SHARDED)
for _row in RESERVED["query_priority"]["priorities"]:
    _row["reserved_queriers"] = 1


@pytest.mark.parametrize("settings", [{}, QWQP, ROUND_ROBIN], ids=["tenant-first", "qwqp", "rr"])
@pytest.mark.parametrize("block", [SHARDED, RESERVED], ids=["sharded", "reserved"])
def test_a_sharded_seed_dispatches_as_the_runtimes_pass_on_a_small_fleet(
    settings: dict[str, str], block: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    _same_dispatches(_scenario(settings, block, 12), monkeypatch)


@pytest.mark.parametrize("start_from", ["proposal", START_FROM_LIVE])
def test_the_recorded_demo_dispatches_as_the_runtimes_pass_with_its_change_applied(
    start_from: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Shards, reserved queriers and priorities of four tenants; applied now,
    # the queue's limits change under the waiting workers mid-run.
    recording = load_recording("demo_window.json")
    live = configs_of(recording["config"])
    tenants = copy.deepcopy(recording["config"]["tenants"])
    tenants["team-c"]["max_queriers_per_tenant"] = 1
    tenants["team-a"]["query_priority"]["priorities"][0]["reserved_queriers"] = 2
    tenants["batch"]["max_queriers_per_tenant"] = 3

    def run() -> Any:
        proposed = merge_proposed(live, QWQP, tenants)
        knobs = Knobs(start_from=start_from, arrival_factor=1.3, duration_seconds=30.0)
        return run_whatif(recent_workload(recording, knobs, 3), live, proposed, seed=3)

    _same_dispatches(run, monkeypatch)


def _federated_recording() -> dict[str, Any]:
    """Tenants a, b, c and the federated a|b, each sending `up` and `ALERTS`, on 8 queriers."""
    service = WaitHistogram()
    service.add(0.2)
    service.add(1.0)
    keys = [
        {
            "tenant": tenant,
            "component": INGESTER,
            "priority": 0,
            "counts": [[offset, rate] for offset in range(-12, 12)],
            "samples": [{"query": query, "api_type": "query", "now": 1.7e9, "epoch": -60}],
        }
        for tenant, rate in (("a", 6), ("b", 5), ("a|b", 4), ("c", 3))
        for query in ("up", "ALERTS")
    ]
    return {
        "window_seconds": 60,
        "bucket_seconds": 5,
        "warmup_seconds": 60,
        "keys": keys,
        "service_seconds": {INGESTER: [[-60.0, sorted(service.counts.items())]]},
        "fleet": [[f"q-{i}", 2] for i in range(8)],
    }


@pytest.mark.parametrize("start_from", ["proposal", START_FROM_LIVE])
def test_a_federated_ids_limits_changing_under_its_queue_dispatch_as_the_runtimes_pass(
    start_from: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a|b is sharded and reserved by its tenants' combined limits, derived
    # as it is queued: applied now, they change at its first arrival after
    # the window's start, with its requests queued under the old ones.
    alerts = {
        "enabled": True,
        "default_priority": 0,
        "priorities": [
            {"priority": 5, "query_attributes": [{"regex": "ALERTS"}], "reserved_queriers": 1}
        ],
    }
    live = merge_proposed(
        ConfigSet(QueueConfig(), {}),
        {},
        {
            "a": {"max_queriers_per_tenant": 3, "query_priority": alerts},
            "b": {"max_queriers_per_tenant": 4},
            "c": {"max_queriers_per_tenant": 1},
        },
    )
    proposed = merge_proposed(
        live,
        {},
        {
            "a": {"max_queriers_per_tenant": 2, "query_priority": alerts},
            "b": {"max_queriers_per_tenant": 5, "query_priority": alerts},
        },
    )

    def run() -> Any:
        knobs = Knobs(start_from=start_from, arrival_factor=2.0)
        return run_whatif(recent_workload(_federated_recording(), knobs, 1), live, proposed, seed=1)

    _same_dispatches(run, monkeypatch)
