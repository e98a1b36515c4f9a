"""What-if replays of actor traffic: the recording keeps each request's actor
path, and the replay queues it in the actor sub-queue the live queue did.

The faithfulness check runs a real `RequestQueue` on a fake clock as the
live scheduler (arrivals, four workers asking in turn, the recorder told
of each step as the runtime tells its observers), records it, and replays
the recording: one tenant whose `users|big` actor sends 60% of the
requests in bursts the fleet cannot keep up with, so the actor
sub-queues (each actor a third of the turns) make big wait about twice
as long as one FIFO would. The replay must give the waits the live queue
measured; the same replay with the path read from another header (no
sub-queues) must not.

The recording keeps the path each request was sent with, not the levels
the live queue placed it by: a recording made under one level replays
under two or three with the actors one level lumped together in their own
sub-queues, taking turns.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from scheduler_core.actor_path import MAX_ACTOR_SEGMENTS, MAX_SEGMENT_LENGTH
from scheduler_core.model import QueueConfig, Request
from scheduler_core.queue import RequestQueue
from scheduler_core.recording import RECORDING_FORMAT
from scheduler_core.traffic import ENTRY_OVERHEAD
from scheduler_core.traffic_record import TrafficRecorder
from scheduler_core.whatif import _engine_input, merge_proposed, run_whatif
from scheduler_core.whatif_engine import run_engine
from scheduler_core.whatif_model import ConfigSet, Knobs, Workload, WorkloadError
from scheduler_core.whatif_workload import recent_workload
from tests.scheduler_core.recorded_queue import run_recorded
from tests.scheduler_core.test_traffic_record import WINDOWS, Clock, _request, _serve

ACTORS = (("users", "big"), ("users", "small"), ("jobs", "nightly"))
SHARES = (0.6, 0.2, 0.2)
LIVE = ConfigSet(QueueConfig(max_outstanding_requests_per_tenant=100_000), {})


def test_a_sampled_request_keeps_its_actor_path_under_the_live_header_bounded() -> None:
    clock = Clock()
    recorder = TrafficRecorder(
        clock=clock, wall_clock=clock.wall, actor_path_header=lambda: "X-Team-Actor"
    )
    hostile = tuple(f"{n}" + "x" * 300 for n in range(15))  # past both bounds
    paths = [("users", "joe"), (), hostile]
    for n, path in enumerate(paths):
        _serve(recorder, clock, _request(n, clock, actor_path=path), 0.1)
    recording = recorder.export(60)
    assert recording["format"] == RECORDING_FORMAT == 2
    (key,) = recording["keys"]
    cut = "|".join(segment[:MAX_SEGMENT_LENGTH] for segment in hostile[:MAX_ACTOR_SEGMENTS])
    assert [s["headers"].get("X-Team-Actor") for s in key["samples"]] == ["users|joe", None, cut]
    assert [s.get("actor") for s in key["samples"]] == ["users|joe", None, cut]
    (tally,) = key["actors"]
    assert tally["counts"] == {"": 1, "users|joe": 1, cut: 1} and tally["other"] == 0
    # The path's text counts in the samples' budget: in a sample and in the
    # epoch's count of each actor (with 100 bytes for the count itself).
    paths_text = len("users|joe") + len(cut)
    samples = 3 * (ENTRY_OVERHEAD + len("sum(rate(x[5m]))")) + paths_text
    assert recorder.sample_bytes == samples + 2 * 100 + paths_text


@pytest.mark.parametrize("levels", [1, 0])
def test_a_recording_made_under_fewer_levels_keeps_every_level_each_request_was_sent(
    levels: int,
) -> None:
    clock = Clock()
    recorder = TrafficRecorder(clock=clock, wall_clock=clock.wall)
    queue = RequestQueue(replace(LIVE.config, max_queue_hierarchy_levels=levels), clock=clock)
    sent = [("team", "alice", "dash1"), ("team", "bob"), ("solo",)]
    for n, path in enumerate(sent):
        request = _request(n, clock, actor_path=path)
        queue.enqueue(request)
        assert request.actor_path == path[:levels]  # placed by its first levels (0: none)
        _serve(recorder, clock, request, 0.1)
    (key,) = recorder.export(60)["keys"]
    whole = ["team|alice|dash1", "team|bob", "solo"]
    assert [s["headers"]["X-Loki-Actor-Path"] for s in key["samples"]] == whole
    assert [s["actor"] for s in key["samples"]] == whole
    (tally,) = key["actors"]
    assert tally["counts"] == dict.fromkeys(whole, 1)


# Live, one level lumps alice (80% of the team's requests) and bob in one FIFO.
TEAM = (("team", "alice"), ("team", "bob"))
ONE_LEVEL = ConfigSet(replace(LIVE.config, max_queue_hierarchy_levels=1), {})


def _mean_wait_by_actor(workload: Workload, configs: ConfigSet) -> dict[tuple[str, ...], float]:
    """Each actor path's mean wait (as sent) in one config's replay of the workload."""
    run, _ = _engine_input(workload, configs, 1)
    run.keep_log = True
    waits: dict[tuple[str, ...], list[float]] = {}
    for request_id, _, wait in run_engine(run).log:
        waits.setdefault(run.actor_paths[int(request_id[1:])], []).append(wait)
    return {path: sum(w) / len(w) for path, w in waits.items()}


@pytest.mark.parametrize("levels", [2, 3])
def test_a_proposal_of_more_levels_makes_actors_live_lumped_together_take_turns(
    levels: int,
) -> None:
    recording = _live_run(1, seconds=300, config=ONE_LEVEL.config, actors=TEAM, shares=(0.8, 0.2))
    workload = recent_workload(recording, Knobs(), 1)
    live = _mean_wait_by_actor(workload, ONE_LEVEL)
    deeper = merge_proposed(ONE_LEVEL, {"max_queue_hierarchy_levels": levels}, {})
    proposed = _mean_wait_by_actor(workload, deeper)
    alice, bob = TEAM
    assert set(live) == set(proposed) == set(TEAM)
    # One FIFO: bob waits behind alice's backlog as long as she does.
    assert live[alice] > 2.0 and abs(live[bob] - live[alice]) <= 0.25 * live[alice]
    # Their own sub-queues: bob's turns come every other request, alice
    # keeps the backlog she makes.
    assert proposed[bob] < 0.25 * proposed[alice] and proposed[bob] < 0.5 * live[bob]


def test_actors_past_the_bound_are_counted_as_other() -> None:
    clock = Clock()
    recorder = TrafficRecorder(clock=clock, wall_clock=clock.wall, max_actors_per_epoch=2)
    for n in range(5):
        _serve(recorder, clock, _request(n, clock, actor_path=("users", f"u{n}")), 0.1)
    (tally,) = recorder.export(60)["keys"][0]["actors"]
    assert tally["counts"] == {"users|u0": 1, "users|u1": 1} and tally["other"] == 3


def _live_run(
    seed: int,
    seconds: int = 420,
    config: QueueConfig = LIVE.config,
    actors: tuple[tuple[str, ...], ...] = ACTORS,
    shares: tuple[float, ...] = SHARES,
) -> dict[str, Any]:
    """A real queue on a fake clock, recorded: the window is its last 5 minutes."""
    rng = random.Random(seed)
    clock = Clock()
    recorder = TrafficRecorder(clock=clock, wall_clock=clock.wall, seed=seed)
    queue = RequestQueue(config, clock=clock)

    def arrivals() -> Iterator[Request]:
        start = at = clock.now
        for n in itertools.count():
            # 20 s bursts at 1.5x the fleet's 40 requests a second, then 20 s at 0.3x.
            rate = 60.0 if int(at - start) % 40 < 20 else 12.0
            at += rng.expovariate(rate)
            if at >= start + seconds:
                return
            clock.now = at  # the request's wall-clock times are its arrival's
            path = rng.choices(actors, shares)[0]
            yield _request(
                n, clock, actor_path=path, payload=rng.uniform(0.05, 0.15), enqueued_at=at
            )

    run_recorded(queue, recorder, clock, arrivals(), workers=4)
    recording = recorder.export(300)
    recording["fleet"] = [["q-1", 4]]
    recording["windows"] = WINDOWS
    return recording


def _agrees(sim: dict[str, Any], real: dict[str, Any]) -> bool:
    return all(abs(sim[q] - real[q]) <= 0.25 * real[q] + 0.02 for q in ("mean", "p50", "p99"))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_replay_queues_each_actor_where_the_live_queue_did(seed: int) -> None:
    recording = _live_run(seed)
    measured = recording["measured"]["by_priority"]["0"]
    assert measured["p99"] > 5.0  # real queues, actors behind each other
    off = merge_proposed(LIVE, {"actor_path_header": "X-Other"}, {})
    body = run_whatif(recent_workload(recording, Knobs(), seed), LIVE, off, seed=seed)
    assert _agrees(body["live"]["by_priority"]["0"], measured), (body["live"], measured)
    # Without the sub-queues (the path is read from a header nobody sends)
    # big waits with everyone in one FIFO: the replay no longer agrees.
    assert not _agrees(body["proposed"]["by_priority"]["0"], measured)


def test_each_config_reads_the_recorded_path_as_admission_would() -> None:
    recording = _live_run(1, seconds=200)
    workload = recent_workload(recording, Knobs(), 1)
    live, _ = _engine_input(workload, LIVE, 1)
    assert set(live.actor_paths) == set(ACTORS)
    # Header names compare in any case, as HTTP's do; another name finds none.
    lower = merge_proposed(LIVE, {"actor_path_header": "x-loki-actor-path"}, {})
    assert _engine_input(workload, lower, 1)[0].actor_paths == live.actor_paths
    other = merge_proposed(LIVE, {"actor_path_header": "X-Other"}, {})
    assert not _engine_input(workload, other, 1)[0].actor_paths


def test_a_format_1_recording_replays_without_actors_and_a_newer_one_is_refused() -> None:
    recording = _live_run(1, seconds=200)
    old = {**recording, "format": 1, "keys": []}
    for key in recording["keys"]:
        samples = [
            {k: v for k, v in s.items() if k != "actor"} | {"headers": {}} for s in key["samples"]
        ]
        old["keys"].append({k: v for k, v in key.items() if k != "actors"} | {"samples": samples})
    workload = recent_workload(old, Knobs(), 1)
    assert not _engine_input(workload, LIVE, 1)[0].actor_paths
    with pytest.raises(WorkloadError, match="format 3 is newer"):
        recent_workload({**recording, "format": 3}, Knobs(), 1)
