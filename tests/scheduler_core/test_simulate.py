"""The fairness simulation: deterministic, lossless, and QWQP protects ingesters.

Every assertion is on virtual time, which is exact for a seed, never on wall
time.
"""

from __future__ import annotations

import dataclasses

import pytest

from scheduler_core.model import INGESTER, STORE_GATEWAY
from scheduler_core.simulate import SCENARIOS, STRATEGIES, Scenario, main, run_scenario
from scheduler_core.simulate_actors import LOKI_PUBLISHED, run_fairness
from scheduler_core.simulate_actors import report as fairness_report

TENANT_FIRST, COMPONENT_RR, QWQP = STRATEGIES
HALF_SLOW = next(s for s in SCENARIOS if s.name == "1 tenant, 50% slow")


def test_same_seed_gives_the_same_run_and_another_seed_a_different_one() -> None:
    first = run_scenario(HALF_SLOW, QWQP, seed=3)
    again = run_scenario(HALF_SLOW, QWQP, seed=3)
    other = run_scenario(HALF_SLOW, QWQP, seed=4)
    assert first == again
    assert first.waits != other.waits


def test_qwqp_cuts_ingester_mean_queue_time_at_half_slow_by_at_least_five_times() -> None:
    tenant_first = run_scenario(HALF_SLOW, TENANT_FIRST, seed=1).stats[INGESTER].mean
    qwqp = run_scenario(HALF_SLOW, QWQP, seed=1).stats[INGESTER].mean
    assert qwqp > 0
    assert tenant_first / qwqp >= 5


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_every_request_is_completed_exactly_once_under_every_strategy(scenario: Scenario) -> None:
    for strategy in STRATEGIES:
        result = run_scenario(scenario, strategy, seed=2)
        ids = [rid for rid, _ in result.waits]
        assert result.completed == result.enqueued == scenario.requests
        assert result.left_queued == 0
        assert len(ids) == len(set(ids)) == scenario.requests


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_store_gateway_mean_is_roughly_unchanged_between_layouts(scenario: Scenario) -> None:
    """Tolerance: within 10% of tenant-first, or 15 ms when both are tiny.

    QWQP only reorders which queries wait; the slow work, and so the time
    the slow queries spend queued, stays about the same (as Mimir found).
    """
    base = run_scenario(scenario, TENANT_FIRST, seed=1).stats[STORE_GATEWAY].mean
    qwqp = run_scenario(scenario, QWQP, seed=1).stats[STORE_GATEWAY].mean
    assert abs(qwqp - base) <= max(0.10 * base, 0.015)


def test_one_tenant_round_robin_is_the_same_in_both_layouts() -> None:
    tenant_first = run_scenario(HALF_SLOW, TENANT_FIRST, seed=5)
    component_first = run_scenario(HALF_SLOW, COMPONENT_RR, seed=5)
    assert tenant_first.waits == component_first.waits


def test_waiting_workers_are_woken_by_each_arrival() -> None:
    """Below capacity no request should wait: an idle worker takes it at once."""
    light = dataclasses.replace(HALF_SLOW, requests=300, arrival_rate=200.0)
    for strategy in STRATEGIES:
        result = run_scenario(light, strategy, seed=9)
        assert result.completed == result.enqueued == 300
        assert max(wait for _, wait in result.waits) == 0.0


def test_sharded_tenant_is_never_served_by_a_querier_outside_its_shard() -> None:
    """With 7 of 8 queriers per tenant, one querier's workers serve nothing."""
    scenario = dataclasses.replace(HALF_SLOW, requests=200)
    result = run_scenario(scenario, QWQP, seed=1)
    assert result.completed == 200
    assert len(result.served_by) == 7


def test_the_command_prints_both_tables_with_mimirs_figures_and_the_ratio(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "Ingester queue time" in out and "Store-gateway queue time" in out
    assert "0.3894" in out and "0.0118" in out
    assert "(target >= 5x) PASS" in out
    assert "Every request completed: yes" in out


def test_lokis_fairness_test_gives_lokis_figures_on_a_virtual_clock() -> None:
    off, on = run_fairness(False), run_fairness(True)
    # Without sub-queues b waits behind all of a; with them they take turns.
    assert off.durations == {"a": pytest.approx(2.0), "b": pytest.approx(2.2)}
    assert on.durations == {"a": pytest.approx(2.25), "b": pytest.approx(0.6)}
    assert off.completed == on.completed == 120
    for result in (off, on):
        for actor, seconds in result.durations.items():
            assert seconds == pytest.approx(LOKI_PUBLISHED[result.hierarchical][actor], rel=0.02)
    assert "0.605" in fairness_report([off, on])
