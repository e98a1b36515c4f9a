"""`knobs.start_from`: a proposal replayed as if applied long ago, or applied now.

By default (`proposal`) the proposal's run admits the warm-up under the
proposal too, so its window starts with the backlog the proposal would have
built. "Apply now" (`live`) admits and queues the warm-up under the live
config and applies the proposal at the window's start through the queue's
own setters, as a save reaches the live scheduler: what was queued keeps
the priority the live config gave it, and only arrivals from then on are
classified by the proposal.

The hand-made window (`_workload`): one querier with one worker, one tenant
`t`, on the engine's virtual clock, measured from 60 s to 300 s:

    X arrives at 0 (`up`, the warm-up), served 0-100: the worker is busy
    A arrives at 10 (`special_query`, the warm-up), queued behind X
    B arrives at 70 (`special_query`, the window)
    after X, one of A and B is served 100-110, the other 110-120

The live config has no rules (everything priority 0); the proposal gives
`special` priority 5. Live: FIFO, A waits 90 s, B 40 s. Proposed as if
long applied: both priority 5, FIFO, the same waits at priority 5. Applied
now: A keeps its live 0, B gets the proposal's 5 and overtakes A, so B
waits 30 s and A 100 s.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from scheduler_core.model import INGESTER, QueueConfig, Request, TenantLimits
from scheduler_core.queue import RequestQueue
from scheduler_core.validation import tenant_limits_from_dict
from scheduler_core.whatif import SpecInvalid, merge_proposed, run_whatif
from scheduler_core.whatif_apply import ConfigChange, apply_change
from scheduler_core.whatif_engine import US
from scheduler_core.whatif_model import (
    START_FROM_LIVE,
    START_FROM_PROPOSAL,
    ConfigSet,
    Kind,
    Knobs,
    Workload,
)
from scheduler_core.whatif_spec import parse_spec, read_spec
from scheduler_core.whatif_workload import recent_workload
from tests.scheduler_core.whatif_measured import configs_of, load_recording

NOW = 1.7e9
SPECIAL = {
    "query_priority": {
        "enabled": True,
        "priorities": [{"priority": 5, "query_attributes": [{"regex": "special"}]}],
    }
}
LIVE = ConfigSet(QueueConfig(), {})
PROPOSED = merge_proposed(LIVE, {}, {"t": SPECIAL})


def _workload(start_from: str, warmup_seconds: int = 60) -> Workload:
    """The window the module doc draws (the warm-up shifted away when it is 0)."""
    shift = 60 - warmup_seconds
    kinds = [
        Kind("t", hint=INGESTER, query="up", start=NOW, end=NOW, now=NOW),
        Kind("t", hint=INGESTER, query="special_query", start=NOW, end=NOW, now=NOW),
    ]
    times = [max(0, t - shift) * US for t in (0, 10, 70)]
    return Workload(
        kinds=kinds,
        times=times,
        kind_of=[0, 1, 1],
        # The service model below reads the quantile as hundreds of seconds.
        quantiles=[1.0, 0.1, 0.1],
        seconds=[0, 0, 0],
        service=lambda component, u, second: round(u * 100 * US),
        fleet=[("q-1", 1)],
        description={"kind": "recent", "start_from": start_from},
        duration_seconds=240.0,
        measure_from_us=warmup_seconds * US,
        measure_until_us=(warmup_seconds + 240) * US,
        start_from=start_from,
    )


def _waits(side: dict[str, Any]) -> dict[str, list[float]]:
    """Each priority's longest and median wait: of at most two requests, both of them."""
    return {p: [row["max"], row["p50"]] for p, row in side["by_priority"].items()}


def _run(start_from: str) -> dict[str, Any]:
    return run_whatif(_workload(start_from), LIVE, PROPOSED, seed=1)


def test_applied_now_a_queued_request_keeps_its_live_priority_and_a_new_one_the_proposals():
    body = _run(START_FROM_LIVE)
    # B (arrived in the window, the proposal's 5) overtook A (queued under
    # live, 0): B waited 100 - 70, A 110 - 10.
    assert _waits(body["proposed"]) == {"5": [30.0, 30.0], "0": [100.0, 100.0]}
    assert body["verdicts"][:2] == [
        "p99 for priority 5: no requests -> 30 s",
        "p99 for priority 0: 90 s -> 100 s",
    ]


def test_the_live_side_is_the_same_run_whichever_backlog_the_proposal_starts_from() -> None:
    applied_now, long_ago = _run(START_FROM_LIVE), _run(START_FROM_PROPOSAL)
    assert applied_now["live"] == long_ago["live"]
    # FIFO at priority 0: A waited 100 - 10, B 110 - 70.
    assert _waits(applied_now["live"]) == {"0": [90.0, 40.0]}


def test_by_default_the_proposal_starts_from_its_own_backlog_as_if_applied_long_ago() -> None:
    body = _run(START_FROM_PROPOSAL)
    # A was admitted under the proposal too: both at 5, first come first served.
    assert _waits(body["proposed"]) == {"5": [90.0, 40.0]}


def test_without_a_warm_up_nothing_is_queued_under_live_so_apply_now_is_the_proposal() -> None:
    # The window starts at 0: A and X arrive in it and are the proposal's.
    bodies = [
        run_whatif(_workload(how, warmup_seconds=0), LIVE, PROPOSED, seed=1)
        for how in (START_FROM_LIVE, START_FROM_PROPOSAL)
    ]
    assert bodies[0]["proposed"] == bodies[1]["proposed"]
    assert set(bodies[0]["proposed"]["by_priority"]) == {"5", "0"}


def test_the_reservations_reported_are_the_applied_proposals() -> None:
    reserving = merge_proposed(
        LIVE,
        {},
        {
            "t": {
                "query_priority": {
                    **SPECIAL["query_priority"],
                    "priorities": [
                        {
                            "priority": 5,
                            "reserved_queriers": 1,
                            "query_attributes": [{"regex": "special"}],
                        }
                    ],
                }
            }
        },
    )
    workload = _workload(START_FROM_LIVE)
    workload.fleet = [("q-1", 1), ("q-2", 1)]
    body = run_whatif(workload, LIVE, reserving, seed=1)
    assert body["live"]["reserved_queriers"] == []
    assert body["proposed"]["reserved_queriers"] == ["q-1"]


@pytest.fixture(scope="module")
def change_window() -> tuple[dict[str, Any], ConfigSet, ConfigSet]:
    """The recorded window before a change (a backlog at its start) and configs A and B."""
    before = load_recording("change_before.json")
    after = load_recording("change_after.json")
    return before, configs_of(before["config"]), configs_of(after["config"])


def test_a_replay_without_the_knob_is_exactly_one_starting_from_the_proposal(
    change_window: tuple[dict[str, Any], ConfigSet, ConfigSet],
) -> None:
    recording, a, b = change_window
    absent = parse_spec({"workload": {"kind": "recent"}}).knobs
    assert absent.start_from == START_FROM_PROPOSAL
    knobs = Knobs(duration_seconds=90.0)
    runs = {
        how: run_whatif(
            recent_workload(recording, Knobs(duration_seconds=90.0, start_from=how), 2),
            a,
            b,
            seed=2,
        )
        for how in (START_FROM_PROPOSAL, START_FROM_LIVE)
    }
    default = run_whatif(recent_workload(recording, knobs, 2), a, b, seed=2)
    assert default == runs[START_FROM_PROPOSAL]
    assert default["workload"]["start_from"] == START_FROM_PROPOSAL
    assert runs[START_FROM_LIVE]["workload"]["start_from"] == START_FROM_LIVE
    # The knob is not ignored: applied now, B's window starts with A's backlog.
    assert runs[START_FROM_LIVE]["live"] == default["live"]
    assert runs[START_FROM_LIVE]["proposed"] != default["proposed"]


def test_a_proposal_equal_to_the_live_config_applied_now_changes_nothing(
    change_window: tuple[dict[str, Any], ConfigSet, ConfigSet],
) -> None:
    recording, a, _ = change_window
    same = merge_proposed(a, {}, {})
    workload = recent_workload(recording, Knobs(duration_seconds=90.0, start_from="live"), 3)
    body = run_whatif(workload, a, same, seed=3)
    assert body["proposed"] == body["live"]


def test_apply_change_sets_only_what_differs_and_leaves_queued_requests_as_they_were() -> None:
    calls: list[tuple[str, str]] = []

    class Recording(RequestQueue):
        def set_tenant_limits(self, tenant_id: str, limits: TenantLimits) -> None:
            calls.append(("set", tenant_id))
            super().set_tenant_limits(tenant_id, limits)

        def remove_tenant_limits(self, tenant_id: str) -> None:
            calls.append(("remove", tenant_id))
            super().remove_tenant_limits(tenant_id)

    queue = Recording(QueueConfig(), clock=lambda: 0.0)
    kept = tenant_limits_from_dict({"max_queriers_per_tenant": 2})
    applied = {"kept": kept, "gone": TenantLimits(), "t": TenantLimits()}
    for tenant_id, limits in applied.items():
        queue.set_tenant_limits(tenant_id, limits)
    queue.enqueue(Request(id="a", tenant_id="t", component=INGESTER, priority=0))
    calls.clear()
    config = replace(QueueConfig(), layout="component-first")
    limits = {"kept": kept, "t": tenant_limits_from_dict(SPECIAL), "new": kept}
    apply_change(queue, applied, ConfigChange(config, limits))
    assert calls == [("remove", "gone"), ("set", "t"), ("set", "new")]
    assert queue.config.layout == "component-first"
    assert queue.tenant_limits("t").query_priority.enabled
    queue.connect_querier("q-1")
    request, _ = queue.dequeue("q-1", 0)
    assert request is not None and request.id == "a" and request.priority == 0


def test_start_from_is_checked_and_named_at_its_knob() -> None:
    recent = {"kind": "recent"}
    with pytest.raises(SpecInvalid) as refused:
        parse_spec({"workload": recent, "knobs": {"start_from": "now"}})
    assert [(e.path, e.message) for e in refused.value.errors] == [
        ("knobs.start_from", "must be one of proposal, live, got 'now'")
    ]
    _, found = read_spec(
        {"workload": {"kind": "scenario", "name": "cortex-seed"}, "knobs": {"start_from": "live"}}
    )
    assert [e.path for e in found] == ["knobs.start_from"]
    assert found[0].message.startswith("live applies only to recent traffic")
    scenario = {"kind": "scenario", "name": "cortex-seed"}
    assert parse_spec({"workload": scenario, "knobs": {"start_from": "proposal"}}).knobs == Knobs()
    assert parse_spec({"workload": recent, "knobs": {"start_from": None}}).knobs == Knobs()
    live = parse_spec({"workload": recent, "knobs": {"start_from": "live"}})
    assert live.knobs.start_from == START_FROM_LIVE
    _, wrong_type = read_spec({"workload": recent, "knobs": {"start_from": 1}})
    assert [(e.path, e.message) for e in wrong_type] == [
        ("knobs.start_from", "must be one of proposal, live, got 1")
    ]
