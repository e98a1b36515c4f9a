"""The simulator is the scheduler: a recorded window replayed under the live config
gives the waits the real scheduler measured over it.

The fixture (`fixtures/demo_window.json`) is a 5-minute window of the demo's
traffic recorded from a real Daphne (`python -m tests.load.record_demo_window`:
`manage.py loadgen` with websocket and Cortex gRPC clients against the demo
config, about 57 requests per second, 7 queriers x 4 workers), downloaded
from `GET /api/v1/recording/`: arrivals, sampled queries, service times, the
fleet, the live config and the waits the scheduler measured.

Tolerance (docs/DESIGN.md): for every component with at least 100 measured
dispatches, the simulated mean and p99 queue wait are within 25% of the
measured ones, plus 10 ms (mean) or 20 ms (p99) of slack for near-zero waits
and the measured percentiles' 5% histogram buckets; the dispatch counts within
5%; the mean wait of each priority level within 30% plus 20 ms. It must hold
for every seed tried. The replay differs from the real run only by chance
(arrival instants within 5 s buckets, which sampled query, which service
time), which these bounds cover with room; a config the scheduler was not
running (priorities off) breaks them, which the last test shows.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scheduler_core.whatif import merge_proposed, run_whatif
from scheduler_core.whatif_model import Knobs
from scheduler_core.whatif_workload import recent_workload
from tests.scheduler_core.whatif_measured import configs_of, disagreements, load_recording


def _recording() -> dict[str, Any]:
    return load_recording("demo_window.json")


def test_the_fixture_is_a_real_demo_window() -> None:
    recording = _recording()
    assert recording["window_seconds"] >= 300
    assert sum(n for k in recording["keys"] for offset, n in k["counts"] if offset < 0) > 1000
    assert {"team-a", "team-b", "team-c", "batch"} <= {k["tenant"] for k in recording["keys"]}
    assert ["cortex-querier-1", 4] in recording["fleet"] and len(recording["fleet"]) == 7
    waits = recording["measured"]["by_component"]
    assert sum(c["count"] for c in waits.values()) > 10_000
    # Real queues: the demo's low priorities wait seconds behind the high ones.
    assert max(c["p99"] for c in waits.values()) > 5.0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_live_config_replayed_gives_the_waits_the_scheduler_measured(seed: int) -> None:
    recording = _recording()
    live = configs_of(recording["config"])
    body = run_whatif(recent_workload(recording, Knobs(), seed), live, live, seed=seed)
    assert disagreements(body["live"], recording["measured"]) == []


def test_a_config_the_scheduler_was_not_running_does_not_agree() -> None:
    recording = _recording()
    raw = copy.deepcopy(recording["config"])
    for block in raw["tenants"].values():
        block.setdefault("query_priority", {})["enabled"] = False
    wrong = configs_of(raw)
    body = run_whatif(recent_workload(recording, Knobs(), 1), wrong, wrong, seed=1)
    assert disagreements(body["live"], recording["measured"]) != []


def test_a_proposed_max_federated_tenants_refuses_those_ids_before_the_queue() -> None:
    recording = _recording()
    for key in recording["keys"]:
        if key["tenant"] == "team-c":
            key["tenant"] = "team-c|team-a|batch"  # as a federating frontend sends it
    live = configs_of(recording["config"])
    proposed = merge_proposed(live, {"max_federated_tenants": 2}, {})
    body = run_whatif(recent_workload(recording, Knobs(), 1), live, proposed, seed=1)
    federated = "team-c|team-a|batch"
    assert body["live"]["rejected"]["too_many_tenants"] == 0
    refused = body["proposed"]["rejected"]
    assert refused["too_many_tenants"] > 0
    assert refused["by_tenant"][federated] == refused["too_many_tenants"]
    assert refused["total"] == sum(refused["by_tenant"].values())
    # Everything else is offered alike; the refused ID is never queued.
    offered = body["live"]["requests"]["offered"]
    assert body["proposed"]["requests"]["offered"] == offered
    assert federated not in {row["tenant"] for row in body["proposed"]["worst_tenants"]}
