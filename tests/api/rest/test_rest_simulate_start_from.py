"""`simulate/`'s `knobs.start_from`: "apply now" on recent traffic, refused for a scenario.

The recorder here saw eight minutes of one tenant's traffic at twice what
its one querier worker serves, so the window starts with a backlog (at the
tenant's outstanding limit) queued under the live rules.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from api.rest.views import simulate as simulate_view
from api.wire.traffic_recording import LiveCapture
from scheduler_core.model import Request
from scheduler_core.traffic_record import TrafficRecorder
from tests.examples import SEED_TENANT_CONFIG

URL = "/api/v1/simulate/"
RECENT = {"kind": "recent", "window_seconds": 300}


@pytest.fixture(autouse=True)
def _in_process(settings: Any) -> None:
    settings.SIMULATION_IN_WORKER_PROCESS = False


def _post(client: Any, body: dict[str, Any], expected: int = 200) -> dict[str, Any]:
    response = client.post(URL, body, format="json")
    assert response.status_code == expected, response.content
    return dict(response.json())


def _recorded() -> TrafficRecorder:
    """Eight minutes of t1's `max(up)` range queries at 10/s, each served in 0.2 s."""
    clock = [1000.0]
    recorder = TrafficRecorder(clock=lambda: clock[0], wall_clock=lambda: 1.7e9 + clock[0])
    rng = random.Random(5)
    for i in range(4800):
        clock[0] += rng.expovariate(10.0)
        wall = 1.7e9 + clock[0]
        request = Request(
            id=f"r{i}",
            tenant_id="t1",
            component="ingester",
            query="max(up)",
            api_type="query_range",
            start=wall - 3600,
            end=wall,
            step=30,
        )
        recorder.on_enqueued(request)
        recorder.on_dispatched(request, "q-1", 0, 0.0)
        clock[0] += 0.2
        recorder.on_completed(request)
        clock[0] -= 0.2
    return recorder


@pytest.fixture
def one_worker(monkeypatch: Any) -> None:
    recorder = _recorded()

    async def capture(window: int) -> LiveCapture:
        return LiveCapture(recorder.capture(window), (("q-1", 1),), {})

    monkeypatch.setattr(simulate_view, "capture_on_loop", capture)


def test_applied_now_the_backlog_queued_under_the_live_rules_keeps_its_priority(
    editor_api: Any, one_worker: None
) -> None:
    # Live: the seed's rules give max(up) over the last hour priority 2.
    editor_api.put("/api/v1/tenants/t1/", SEED_TENANT_CONFIG, format="json")
    off = copy.deepcopy(SEED_TENANT_CONFIG)
    off["query_priority"]["enabled"] = False
    body = {"workload": RECENT, "proposed": {"tenants": {"t1": off}}}
    long_ago = _post(editor_api, body)
    now = _post(editor_api, {**body, "knobs": {"start_from": "live"}})
    assert long_ago["workload"]["start_from"] == "proposal"
    assert now["workload"]["start_from"] == "live"
    assert now["workload"]["warmup_seconds"] >= 60
    assert now["live"] == long_ago["live"]
    assert set(now["live"]["by_priority"]) == {"2"}
    # As if applied long ago every request is the proposal's 0; applied now,
    # the warm-up's backlog is dispatched in the window at its live 2.
    assert set(long_ago["proposed"]["by_priority"]) == {"0"}
    assert set(now["proposed"]["by_priority"]) == {"2", "0"}
    assert now["proposed"]["by_priority"]["2"]["count"] > 0


@pytest.mark.parametrize(
    ("workload", "value", "message"),
    [
        (RECENT, "now", "must be one of proposal, live, got 'now'"),
        (RECENT, ["live"], "must be one of proposal, live, got a list"),
        ({"kind": "scenario", "name": "cortex-seed"}, "live", "live applies only to recent"),
    ],
)
def test_a_bad_start_from_is_a_400_at_its_knob_and_runs_nothing(
    viewer_api: Any, monkeypatch: Any, workload: dict[str, Any], value: object, message: str
) -> None:
    def never(*_: Any) -> Any:
        raise AssertionError("a refused request must run nothing")

    monkeypatch.setattr(simulate_view, "submit", never)
    monkeypatch.setattr(simulate_view, "capture_on_loop", never)
    body = _post(viewer_api, {"workload": workload, "knobs": {"start_from": value}}, 400)
    (said,) = body["knobs"]["start_from"]
    assert said.startswith(message)
