"""The what-if simulator: deterministic, bounded, knobs that work, and the seed's claims.

Every assertion is on virtual time, exact for a seed, never on wall time.
"""

from __future__ import annotations

import copy
import time

import pytest

from scheduler_core.model import INGESTER, STORE_GATEWAY
from scheduler_core.simulate import SCENARIOS, STRATEGIES, run_scenario
from scheduler_core.whatif import (
    SpecInvalid,
    merge_proposed,
    proposal_errors,
    run_whatif,
    unknown_tenants,
    verdicts,
)
from scheduler_core.whatif_engine import SimulationCancelled, SimulationTimeLimit
from scheduler_core.whatif_model import MAX_REQUESTS, Knobs, WorkloadError
from scheduler_core.whatif_scenarios import SEED_TENANT_CONFIG, scenario_base, scenario_workload
from scheduler_core.whatif_spec import parse_spec
from scheduler_core.whatif_workload import recent_workload
from tests.examples import SEED_TENANT_CONFIG as EXAMPLE_SEED_CONFIG

QWQP = {"layout": "component-first", "component_selection": "querier-worker-priority"}


def _run(name: str, settings: dict[str, object] | None = None, seed: int = 1, **knobs: object):
    base = scenario_base(name)
    proposed = merge_proposed(base, settings or {}, {})
    workload = scenario_workload(name, Knobs(**knobs), seed)  # type: ignore[arg-type]
    return run_whatif(workload, base, proposed, seed=seed)


def test_the_same_seed_gives_the_same_answer_and_another_seed_another() -> None:
    first = _run("cortex-seed", duration_seconds=60.0, seed=4)
    assert first == _run("cortex-seed", duration_seconds=60.0, seed=4)
    assert first["live"] != _run("cortex-seed", duration_seconds=60.0, seed=5)["live"]


@pytest.mark.parametrize("share", [0.1, 0.5, 0.9])
def test_the_mimir_scenario_is_the_published_table_run(share: float) -> None:
    """Live (tenant-first) and proposed QWQP equal `scheduler_core.simulate`'s rows."""
    scenario = next(s for s in SCENARIOS if s.name == f"1 tenant, {share:.0%} slow")
    body = _run("mimir-slow-consumer", QWQP, seed=1, slow_share=share)
    for side, strategy in (("live", STRATEGIES[0]), ("proposed", STRATEGIES[2])):
        table = run_scenario(scenario, strategy, seed=1).stats
        ingester = body[side]["by_component"][INGESTER]
        assert ingester["count"] == table[INGESTER].count
        assert ingester["mean"] == pytest.approx(table[INGESTER].mean, abs=1e-6)
        slow = [
            body[side]["by_component"][c] for c in (STORE_GATEWAY, "ingester-and-store-gateway")
        ]
        assert sum(c["count"] for c in slow) == table[STORE_GATEWAY].count


def test_qwqp_cuts_the_ingester_wait_at_half_slow_as_mimir_found() -> None:
    body = _run("mimir-slow-consumer", QWQP)
    live, proposed = (body[s]["by_component"][INGESTER]["mean"] for s in ("live", "proposed"))
    assert proposed > 0 and live / proposed >= 5


def test_the_cortex_seed_waits_shrink_with_priority_and_the_reserved_querier_idles() -> None:
    body = _run("cortex-seed")
    live = body["live"]
    means = {p: live["by_priority"][p]["mean"] for p in ("2", "1", "0")}
    assert means["2"] < means["1"] < means["0"]
    assert live["by_priority"]["2"]["p99"] < live["by_priority"]["0"]["p99"]
    # No priority-3 query comes, so the reserved querier never works.
    assert live["reserved_queriers"] == ["querier-1"]
    assert live["reserved_idle_seconds"] == pytest.approx(live["makespan_seconds"])
    assert live["makespan_seconds"] >= 300.0
    # Nothing proposed: each verdict line says the same figure on both sides.
    assert [line.split(":")[0] for line in body["verdicts"]] == [
        f"p99 for priority {p}" for p in ("2", "1", "0")
    ]
    for line in body["verdicts"]:
        before, after = line.split(": ")[1].split(" -> ")
        assert before == after


def test_the_scenarios_config_is_the_seeds_example() -> None:
    assert SEED_TENANT_CONFIG == EXAMPLE_SEED_CONFIG


def test_turning_the_seeds_priorities_off_makes_everything_wait_alike() -> None:
    off = copy.deepcopy(SEED_TENANT_CONFIG)
    off["query_priority"]["enabled"] = False
    base = scenario_base("cortex-seed")
    proposed = merge_proposed(base, {}, {"tenant-1": off})
    body = run_whatif(scenario_workload("cortex-seed", Knobs(), 1), base, proposed, seed=1)
    assert set(body["proposed"]["by_priority"]) == {"0"}
    assert body["proposed"]["reserved_idle_seconds"] == 0.0
    assert body["verdicts"][0].startswith("p99 for priority 2: ")
    assert body["verdicts"][0].endswith(" -> no requests")


def test_knobs_scale_arrivals_service_times_queriers_and_duration() -> None:
    plain = _run("cortex-seed", duration_seconds=60.0)
    double = _run("cortex-seed", duration_seconds=60.0, arrival_factor=2.0)
    assert 1.8 < double["workload"]["requests"] / plain["workload"]["requests"] < 2.2
    assert plain["workload"]["duration_seconds"] == 60.0
    slow = _run("cortex-seed", duration_seconds=60.0, service_factor={STORE_GATEWAY: 3.0})
    busy = (slow["live"]["utilisation"], plain["live"]["utilisation"])
    assert busy[0][STORE_GATEWAY] > busy[1][STORE_GATEWAY]
    # Degraded store-gateways overload the fleet: the tenant's outstanding
    # limit refuses work, its fast queries too.
    assert slow["live"]["rejected"]["total"] > plain["live"]["rejected"]["total"]
    more = _run("cortex-seed", duration_seconds=60.0, queriers=8)
    assert more["workload"]["workers"] == 32
    assert more["live"]["by_priority"]["0"]["p99"] < plain["live"]["by_priority"]["0"]["p99"]


def test_a_run_too_large_is_refused_before_it_starts() -> None:
    with pytest.raises(WorkloadError) as refused:
        scenario_workload("cortex-seed", Knobs(arrival_factor=100.0, duration_seconds=3600.0), 1)
    assert refused.value.path == "knobs.duration_seconds"
    assert f"{MAX_REQUESTS:,}" in str(refused.value)


def test_a_run_too_large_is_refused_at_the_knob_the_operator_raised() -> None:
    """The page marks the box a path names: not a blank Duration for Arrivals x 100."""
    for knobs, path in (
        (Knobs(arrival_factor=100.0), "knobs.arrival_factor"),
        (Knobs(arrival_factor=100.0, duration_seconds=200.0), "knobs.arrival_factor"),
        (Knobs(arrival_factor=20.0, duration_seconds=3600.0), "knobs.duration_seconds"),
    ):
        with pytest.raises(WorkloadError) as refused:
            scenario_workload("cortex-seed", knobs, 1)
        assert refused.value.path == path, knobs
    assert str(refused.value).endswith("shorten duration_seconds or lower arrival_factor")


def test_a_busy_replicas_window_too_large_as_it_is_is_refused_at_the_window() -> None:
    recording = _busy_recording(requests=MAX_REQUESTS + 1)
    for knobs, path in (
        (Knobs(), "workload.window_seconds"),
        (Knobs(arrival_factor=0.5, duration_seconds=1800.0), "knobs.duration_seconds"),
        (Knobs(arrival_factor=2.0), "knobs.arrival_factor"),
    ):
        with pytest.raises(WorkloadError) as refused:
            recent_workload(recording, knobs, 1)
        assert refused.value.path == path, knobs
    assert str(refused.value).endswith("lower arrival_factor or shorten duration_seconds")
    with pytest.raises(WorkloadError) as window:
        recent_workload(recording, Knobs(), 1)
    assert str(window.value).endswith("pick a shorter window or lower arrival_factor")


def _busy_recording(requests: int) -> dict[str, object]:
    """A 900-s window of `requests` arrivals in one bucket (sizes are checked before any replay)."""
    sample = {"query": "up", "api_type": "query", "now": 1.7e9, "epoch": 0}
    return {
        "window_seconds": 900,
        "bucket_seconds": 5,
        "keys": [
            {
                "tenant": "t",
                "component": INGESTER,
                "priority": 0,
                "counts": [[0, requests]],
                "samples": [sample],
            }
        ],
        "service_seconds": {},
        "fleet": [["q-1", 4]],
    }


def test_the_deadline_and_the_cancel_flag_stop_a_run() -> None:
    base = scenario_base("cortex-seed")
    workload = scenario_workload("cortex-seed", Knobs(duration_seconds=600.0), 1)
    with pytest.raises(SimulationTimeLimit):
        run_whatif(workload, base, base, seed=1, deadline=time.monotonic() - 1)
    with pytest.raises(SimulationCancelled):
        run_whatif(workload, base, base, seed=1, should_stop=lambda: True)
    seen: list[float] = []
    run_whatif(workload, base, base, seed=1, progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == 1.0 and 0.4 < seen[len(seen) // 2] < 0.6


def test_a_verdict_reads_like_the_issue_says() -> None:
    live = {"by_priority": {"3": {"p99": 8.1}, "0": {"p99": 0.25}}}
    proposed = {"by_priority": {"3": {"p99": 0.2}}}
    assert verdicts(live, proposed) == [
        "p99 for priority 3: 8.1 s -> 0.2 s",
        "p99 for priority 0: 0.2 s -> no requests",
    ]


def test_a_class_starved_in_the_window_is_said_beside_its_few_quick_waits() -> None:
    """Only its dispatches count, so a starved class's p99 alone would read as an improvement."""
    live = {
        "by_priority": {"1": {"p99": 30.0}},
        "waiting_at_window_end": {"total": 2, "by_priority": {"1": 2, "0": 5}},
    }
    proposed = {
        "by_priority": {"1": {"p99": 0.5}},
        "waiting_at_window_end": {"total": 145, "by_priority": {"1": 140, "0": 5}},
    }
    assert verdicts(live, proposed) == [
        "p99 for priority 1: 30 s -> 0.5 s",
        "still queued at the window's end, priority 1: 2 -> 140",
    ]
    scenario = {"by_priority": {"1": {"p99": 1.0}}, "waiting_at_window_end": None}
    assert verdicts(scenario, scenario) == ["p99 for priority 1: 1.0 s -> 1.0 s"]


def test_a_proposed_config_is_judged_by_the_validator_with_paths() -> None:
    base = scenario_base("cortex-seed")
    bad_rule = {"query_priority": {"enabled": True, "priorities": [{"priority": "x"}]}}
    with pytest.raises(SpecInvalid) as refused:
        merge_proposed(base, {"layout": "sideways"}, {"t.1": bad_rule})
    where = {(e.prefix, e.path) for e in refused.value.errors}
    assert (("proposed", "settings"), "layout") in where
    assert (("proposed", "tenants", "t.1"), "query_priority.priorities[0].priority") in where


def test_the_request_spec_has_defaults_and_names_each_bad_field() -> None:
    spec = parse_spec({"workload": {"kind": "recent"}})
    assert (spec.window_seconds, spec.seed, spec.knobs) == (900, 1, Knobs())
    with pytest.raises(SpecInvalid) as refused:
        parse_spec(
            {
                "workload": {"kind": "recent", "window_seconds": 30},
                "knobs": {"duration_seconds": 0, "service_factor": {INGESTER: "fast"}},
                "run_id": "no spaces",
            }
        )
    paths = {e.path for e in refused.value.errors}
    assert paths == {
        "workload.window_seconds",
        "knobs.duration_seconds",
        f"knobs.service_factor.{INGESTER}",
        "run_id",
    }


def test_an_integer_bound_is_stated_in_full_in_its_error() -> None:
    with pytest.raises(SpecInvalid) as refused:
        parse_spec({"workload": {"kind": "recent"}, "seed": -1})
    (error,) = refused.value.errors
    assert error.message == "must be >= 0 and <= 9223372036854775807, got -1"


def test_a_proposed_rejection_rule_refuses_its_queries_before_the_queue() -> None:
    rules = copy.deepcopy(SEED_TENANT_CONFIG)
    rules["query_rejection"] = {"enabled": True, "query_attributes": [{"regex": "min"}]}
    base = scenario_base("cortex-seed")
    proposed = merge_proposed(base, {}, {"tenant-1": rules})
    body = run_whatif(scenario_workload("cortex-seed", Knobs(), 1), base, proposed, seed=1)
    refused = body["proposed"]["rejected"]
    assert body["live"]["rejected"]["by_rule"] == 0
    # The min() queries (priority 0) are a third of the traffic; none is queued.
    assert refused["by_rule"] == body["live"]["by_priority"]["0"]["count"]
    assert "0" not in body["proposed"]["by_priority"]
    assert body["verdicts"][-1].endswith("-> no requests")


def test_a_null_block_removes_the_tenants_override_so_it_runs_with_the_defaults() -> None:
    base = scenario_base("cortex-seed")
    removed = merge_proposed(base, {}, {"tenant-1": None})
    assert "tenant-1" not in removed.limits
    workload = scenario_workload("cortex-seed", Knobs(duration_seconds=60), 1)
    body = run_whatif(workload, base, removed, seed=1)
    # As a deleted tenant: no priorities, no reserved querier.
    assert set(body["proposed"]["by_priority"]) == {"0"}
    assert body["proposed"]["reserved_queriers"] == []
    assert merge_proposed(base, {}, {"nobody": None}).limits == base.limits


def test_without_a_base_the_settings_are_judged_alone_and_every_block_still_is() -> None:
    late_store = {"query_store_after": "14h"}  # past the default 13h ingesters window
    bad_block = {"max_queriers_per_tenant": "x"}
    with_base = proposal_errors(scenario_base("cortex-seed").config, late_store, {"t": bad_block})
    alone = proposal_errors(None, {**late_store, "layout": "x"}, {"t": bad_block, "u": None})
    assert {(e.prefix, e.path) for e in with_base} == {
        (("proposed", "settings"), "query_store_after"),
        (("proposed", "tenants", "t"), "max_queriers_per_tenant"),
    }
    # No base, no window to compare the store's with: only what is wrong whatever the base.
    assert {(e.prefix, e.path) for e in alone} == {
        (("proposed", "settings"), "layout"),
        (("proposed", "tenants", "t"), "max_queriers_per_tenant"),
    }


def test_a_proposed_tenant_outside_the_known_ones_is_named_with_the_known_ones() -> None:
    (error,) = unknown_tenants(["tenant-1", "tenant-2"], {"tenant-1"}, "in this scenario")
    assert error.prefix == ("proposed", "tenants", "tenant-2")
    assert error.message == (
        "no tenant 'tenant-2' is in this scenario, so proposing it changes nothing "
        "(a mistyped ID?); tenants here: tenant-1"
    )
    many = unknown_tenants(["x"], {f"t{i:02}" for i in range(12)}, "here")
    assert many[0].message.endswith(
        "tenants here: t00, t01, t02, t03, t04, t05, t06, t07, t08, t09, ..."
    )
