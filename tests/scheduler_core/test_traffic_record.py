"""The traffic recorder and the `recent` workload that replays it, on a fake clock."""

from __future__ import annotations

import pytest

from scheduler_core.model import BOTH, INGESTER, STORE_GATEWAY, QueueConfig, Request, TenantLimits
from scheduler_core.traffic import ENTRY_OVERHEAD
from scheduler_core.traffic_record import TrafficRecorder
from scheduler_core.validation import tenant_limits_from_dict
from scheduler_core.whatif import check_proposed_tenants, run_whatif
from scheduler_core.whatif_model import ConfigSet, Kind, Knobs, WorkloadError
from scheduler_core.whatif_workload import recent_workload

WALL = 1_700_000_000.0
WINDOWS = {"query_ingesters_within": 13 * 3600.0, "query_store_after": 12 * 3600.0}


class Clock:
    def __init__(self, now: float = 10_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def wall(self) -> float:
        return WALL + self.now


def _request(n: int, clock: Clock, tenant: str = "t1", **fields: object) -> Request:
    wall = clock.wall()
    values: dict[str, object] = {
        "component": INGESTER,
        "query": "sum(rate(x[5m]))",
        "api_type": "query_range",
        "start": wall - 3600,
        "end": wall,
        "step": 30.0,
    }
    values.update(fields)
    return Request(id=f"r{n}", tenant_id=tenant, **values)  # type: ignore[arg-type]


def _serve(recorder: TrafficRecorder, clock: Clock, request: Request, service: float) -> None:
    recorder.on_enqueued(request)
    recorder.on_dispatched(request, "q-1", 0, 0.5)
    clock.now += service
    recorder.on_completed(request)
    clock.now -= service


def test_arrivals_are_counted_per_key_in_five_second_buckets_within_the_window() -> None:
    clock = Clock()
    recorder = TrafficRecorder(clock=clock, wall_clock=clock.wall)
    for n in range(12):
        _serve(recorder, clock, _request(n, clock), 0.1)
        clock.now += 1.0
    recorder.on_rejected(_request(99, clock, priority=2), "too many outstanding requests")
    recording = recorder.export(60)
    by_key = {(k["tenant"], k["component"], k["priority"]): k for k in recording["keys"]}
    assert set(by_key) == {("t1", INGESTER, 0), ("t1", INGESTER, 2)}
    counts = by_key[("t1", INGESTER, 0)]["counts"]
    assert sum(n for _, n in counts) == 12
    assert all(n <= 5 for _, n in counts)  # at most five one-second arrivals a bucket
    assert recording["measured"]["rejected"] == 1
    assert recording["measured"]["by_component"][INGESTER]["count"] == 12
    assert recording["measured"]["by_component"][INGESTER]["mean"] == pytest.approx(0.5)


def _served_from_10_030(seconds: int) -> tuple[TrafficRecorder, Clock]:
    """A recorder begun half a minute into minute 10_020, a request served each second."""
    clock = Clock(10_030.0)
    recorder = TrafficRecorder(clock=clock, wall_clock=clock.wall)
    for n in range(seconds):
        _serve(recorder, clock, _request(n, clock), 0.1)
        clock.now += 1.0
    return recorder, clock


def test_a_window_longer_than_the_recording_starts_at_the_minute_recording_began() -> None:
    recorder, clock = _served_from_10_030(240)
    recording = recorder.export(900)
    # From 10_020 to 10_270, not the 900 s asked for: the idle fleet of the
    # unrecorded time before would thin out every rate the simulator reports.
    assert recording["window_seconds"] == 10_275 - 10_020
    counts = recording["keys"][0]["counts"]
    assert sum(n for offset, n in counts if offset >= 0) == 240
    clock.now += 1_000  # once the replica is older than the window, it is whole again
    recorder.on_enqueued(_request(999, clock))
    assert recorder.export(900)["window_seconds"] >= 900


def test_old_traffic_leaves_the_window_and_the_ring_forgets_it() -> None:
    clock = Clock()
    recorder = TrafficRecorder(clock=clock, wall_clock=clock.wall, horizon_seconds=600)
    recorder.on_enqueued(_request(1, clock))
    clock.now += 360
    recorder.on_enqueued(_request(2, clock))
    counts = recorder.export(300)["keys"][0]["counts"]
    # Request 1 came before the window: it is part of the warm-up (offset < 0).
    assert sum(n for offset, n in counts if offset >= 0) == 1
    assert sum(n for offset, n in counts if offset < 0) == 1
    clock.now += 700  # a whole horizon later the slot of request 2 is reused
    recorder.on_enqueued(_request(3, clock))
    assert sum(n for _, n in recorder.export(600)["keys"][0]["counts"]) == 1


def test_memory_is_bounded_by_keys_and_samples_whatever_the_rate() -> None:
    clock = Clock()
    recorder = TrafficRecorder(
        clock=clock, wall_clock=clock.wall, max_keys=3, samples_per_epoch=2, epoch_seconds=60
    )
    for n in range(50):
        recorder.on_enqueued(_request(n, clock, tenant=f"t{n % 5}"))
        clock.now += 2.0
    recording = recorder.export(120)
    assert len(recording["keys"]) == 3
    # Two samples per key for each 60-second epoch the window overlaps.
    assert all(len(k["samples"]) <= 2 * 3 for k in recording["keys"])
    assert recording["dropped"] == 20


def test_each_epochs_sample_is_uniform_over_its_requests() -> None:
    clock = Clock()
    recorder = TrafficRecorder(clock=clock, wall_clock=clock.wall, samples_per_epoch=16, seed=5)
    for n in range(400):  # one in four is a rare query, all in one epoch
        recorder.on_enqueued(_request(n, clock, query="rare" if n % 4 == 0 else "common"))
        clock.now += 0.5
    samples = recorder.export(300)["keys"][0]["samples"]
    rare = sum(sample["query"] == "rare" for sample in samples)
    assert len(samples) == 16 and 1 <= rare <= 10


def test_service_time_is_dispatch_to_result_and_cancelled_runs_are_not_one() -> None:
    clock = Clock()
    recorder = TrafficRecorder(clock=clock, wall_clock=clock.wall)
    _serve(recorder, clock, _request(1, clock, component=STORE_GATEWAY), 0.8)
    cancelled = _request(2, clock, component=STORE_GATEWAY)
    recorder.on_enqueued(cancelled)
    recorder.on_dispatched(cancelled, "q-1", 1, 0.0)
    recorder.on_cancelled(cancelled)
    recorder.on_completed(cancelled)
    rows = recorder.export(60)["service_seconds"][STORE_GATEWAY]
    assert sum(n for _, hist in rows for _, n in hist) == 1


def _recording(clock: Clock, seconds: int = 300, rate: float = 4.0) -> dict[str, object]:
    """The last `seconds` of traffic that ran two minutes longer (a warm-up and more)."""
    recorder = TrafficRecorder(clock=clock, wall_clock=clock.wall)
    for n in range(1, int((seconds + 120) * rate) + 1):
        clock.now += 1 / rate
        if n % 4:
            request = _request(n, clock)
        else:  # a frontend named the component of this one (a hint)
            request = _request(n, clock, component=BOTH, query="max(up)")
        _serve(recorder, clock, request, 0.2)
    recording = recorder.export(seconds)
    recording["fleet"] = [["q-1", 4], ["q-2", 4]]
    recording["windows"] = WINDOWS
    return recording


def test_the_recorded_counts_are_replayed_exactly_at_factor_one() -> None:
    recording = _recording(Clock())
    keys = recording["keys"]
    assert isinstance(keys, list)
    offered = sum(n for key in keys for offset, n in key["counts"] if offset >= 0)
    warm = sum(n for key in keys for offset, n in key["counts"] if offset < 0)
    window = recording["window_seconds"]
    assert isinstance(window, int) and 300 <= window < 360  # from a whole minute
    assert recording["warmup_seconds"] == 60 and warm > 0
    workload = recent_workload(recording, Knobs(), seed=1)
    assert workload.description["requests"] == offered
    assert len(workload.times) == offered + warm
    assert workload.measure_from_us == 60_000_000
    assert workload.times == sorted(workload.times)
    assert workload.description["workers"] == 8
    half = recent_workload(recording, Knobs(duration_seconds=window / 2), seed=1)
    assert 0.45 < half.description["requests"] / offered < 0.55
    twice = recent_workload(recording, Knobs(duration_seconds=2.0 * window), seed=1)
    assert twice.description["requests"] == 2 * offered
    fewer = recent_workload(recording, Knobs(queriers=1), seed=1)
    assert fewer.fleet == [("q-1", 4)]
    more = recent_workload(recording, Knobs(queriers=3), seed=1)
    assert more.fleet[-1] == ("sim-querier-1", 4)


def test_a_component_the_frontend_named_stays_and_a_proposed_rule_reprioritises() -> None:
    recording = _recording(Clock())
    workload = recent_workload(recording, Knobs(), seed=2)
    live = ConfigSet(QueueConfig(), {})
    rule = {
        "query_priority": {
            "enabled": True,
            "priorities": [{"priority": 7, "query_attributes": [{"regex": "max"}]}],
        }
    }
    # Narrower windows would make every recorded query "both", but the hinted
    # one was named by its frontend and keeps its component either way.
    narrow = QueueConfig(query_ingesters_within=1800.0, query_store_after=900.0)
    proposed = ConfigSet(narrow, {"t1": tenant_limits_from_dict(rule)})
    body = run_whatif(workload, live, proposed, seed=2)
    assert set(body["live"]["by_priority"]) == {"0"}
    assert set(body["proposed"]["by_priority"]) == {"7", "0"}
    assert set(body["live"]["by_component"]) == {INGESTER, BOTH}
    assert set(body["proposed"]["by_component"]) == {BOTH}
    assert (
        body["proposed"]["by_priority"]["7"]["count"] == body["live"]["by_component"][BOTH]["count"]
    )


def test_the_headers_the_rules_read_are_recorded_in_any_case_under_their_names() -> None:
    # A websocket frontend's headers come as it spelled them; classification
    # reads them in any case, so the replay must have them to match the rules.
    clock = Clock()
    recorder = TrafficRecorder(clock=clock, wall_clock=clock.wall)
    headers = {"user-agent": "Grafana/11", "X-PANEL-ID": "4", "x-other": "kept out"}
    _serve(recorder, clock, _request(1, clock, headers=headers), 0.1)
    (sample,) = recorder.export(60)["keys"][0]["samples"]
    assert sample["headers"] == {"User-Agent": "Grafana/11", "X-Panel-Id": "4"}


def test_a_window_with_no_completed_request_cannot_be_replayed() -> None:
    clock = Clock()
    recorder = TrafficRecorder(clock=clock, wall_clock=clock.wall)
    recorder.on_enqueued(_request(1, clock))
    recording = recorder.export(60)
    recording["fleet"] = [["q-1", 4]]
    with pytest.raises(WorkloadError) as refused:
        recent_workload(recording, Knobs(), seed=1)
    assert refused.value.path == "workload.window_seconds"
    recording["fleet"] = []
    with pytest.raises(WorkloadError) as no_fleet:
        recent_workload(recording, Knobs(), seed=1)
    assert no_fleet.value.path == "knobs.queriers"


def test_a_recorder_younger_than_the_window_has_no_warm_up_from_before_it_began() -> None:
    recorder, clock = _served_from_10_030(90)
    recording = recorder.export(900)
    # Nothing was recorded before 10_030: a minute of warm-up there would be
    # reported, and counted against the size limit, for arrivals never seen.
    assert recording["warmup_seconds"] == 0
    recording["fleet"] = [["q-1", 4]]
    recording["windows"] = WINDOWS
    workload = recent_workload(recording, Knobs(), seed=1)
    assert workload.measure_from_us == 0
    assert workload.description["requests"] == len(workload.times) == 90


def test_a_window_starting_just_after_the_recorder_began_warms_up_on_what_it_recorded() -> None:
    clock = Clock(10_100.0)
    recorder = TrafficRecorder(clock=clock, wall_clock=clock.wall)
    for n in range(130):
        _serve(recorder, clock, _request(n, clock), 0.1)
        clock.now += 1.0
    recording = recorder.export(60)  # from 10_140; the minute before began at 10_100
    assert recording["warmup_seconds"] == 40
    counts = recording["keys"][0]["counts"]
    assert sum(n for offset, n in counts if offset < 0) == 40


def test_a_proposed_tenant_nobody_configured_or_heard_from_is_refused_at_its_id() -> None:
    workload = recent_workload(_recording(Clock()), Knobs(), seed=1)
    live = ConfigSet(QueueConfig(), {"t9": TenantLimits()})  # configured, sent nothing
    block = tenant_limits_from_dict({"max_queriers_per_tenant": 1})

    def proposing(tenant_id: str) -> ConfigSet:
        return ConfigSet(live.config, {**live.limits, tenant_id: block})

    for known in ("t1", "t9"):  # t1 sent the traffic; t9 is configured
        assert run_whatif(workload, live, proposing(known), seed=1)["live"]
    with pytest.raises(WorkloadError) as refused:
        run_whatif(workload, live, proposing("t.11"), seed=1)
    # The ID is one part of the path, dots and all (an error at t -> 11 would be wrong).
    assert (refused.value.prefix, refused.value.path) == (("proposed", "tenants", "t.11"), "")
    assert str(refused.value).endswith("tenants here: t1, t9")
    # A tenant of a federated ID in the traffic is one the traffic knows.
    workload.kinds.append(Kind("t1|t2"))
    check_proposed_tenants(workload, live, proposing("t2"))


def test_removing_the_override_of_a_tenant_nobody_configured_or_heard_from_is_refused() -> None:
    workload = recent_workload(_recording(Clock()), Knobs(), seed=1)
    live = ConfigSet(QueueConfig(), {"t9": TenantLimits()})
    # A removed override leaves no trace in the proposed config: the request names it.
    removed = ConfigSet(live.config, {})
    check_proposed_tenants(workload, live, removed, named=["t9", "t1"])
    with pytest.raises(WorkloadError) as refused:
        run_whatif(workload, live, removed, seed=1, named_tenants=["t9", "t.11"])
    assert refused.value.prefix == ("proposed", "tenants", "t.11")


def test_a_key_idle_for_a_whole_horizon_makes_room_for_a_new_one() -> None:
    clock = Clock()
    recorder = TrafficRecorder(clock=clock, wall_clock=clock.wall, horizon_seconds=600, max_keys=2)
    recorder.on_enqueued(_request(1, clock, tenant="old-1"))
    recorder.on_enqueued(_request(2, clock, tenant="old-2"))
    clock.now += 300
    recorder.on_enqueued(_request(3, clock, tenant="new-1"))  # the old keys are in the window
    assert recorder.export(300)["dropped"] == 1
    clock.now += 600  # a horizon without them: nothing of them is left to replay
    recorder.on_enqueued(_request(4, clock, tenant="new-2"))
    recording = recorder.export(300)
    assert [key["tenant"] for key in recording["keys"]] == ["new-2"]
    assert recording["dropped"] == 0


def test_the_sampled_text_is_held_to_its_budget_and_every_key_keeps_a_query() -> None:
    clock = Clock()
    budget = 20_000
    recorder = TrafficRecorder(
        clock=clock, wall_clock=clock.wall, horizon_seconds=600, max_sample_bytes=budget
    )
    big = "sum(rate(x[5m])) + " + "y" * 4000
    size = ENTRY_OVERHEAD + len(big)  # what one sample of it counts
    for n in range(100):  # 16 of them would be 64 kB for this key alone
        recorder.on_enqueued(_request(n, clock, query=big))
        clock.now += 0.1
    assert budget - size < recorder.sample_bytes <= budget
    # Another key, past the budget, still has its first query to replay.
    recorder.on_enqueued(_request(100, clock, tenant="t2", query=big))
    samples = {k["tenant"]: len(k["samples"]) for k in recorder.export(60)["keys"]}
    assert samples == {"t1": budget // size, "t2": 1}
    assert recorder.sample_bytes == size * (budget // size + 1)
    # Epochs leaving the horizon give their text back: t1 now holds two
    # epochs of 16 small queries each; t2 (no arrival since) keeps its one.
    for n in range(200, 400):
        clock.now += 5.0
        recorder.on_enqueued(_request(n, clock, query="up"))
    assert recorder.sample_bytes == 2 * 16 * (ENTRY_OVERHEAD + len("up")) + size
