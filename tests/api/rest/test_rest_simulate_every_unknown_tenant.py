"""`simulate/` on recent traffic: a 400 names every unknown proposed tenant, worker or not."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from api.rest import simulation
from api.rest.views import simulate as simulate_view
from api.wire.traffic_recording import LiveCapture
from scheduler_core.model import Request
from scheduler_core.traffic_record import TrafficRecorder

URL = "/api/v1/simulate/"
BODY = {
    "workload": {"kind": "recent", "window_seconds": 60},
    "proposed": {"tenants": {"nobody1": {}, "nobody2": None, "acmee": {}}},
}


def _recorded() -> TrafficRecorder:
    """A minute of tenant acme's traffic (a mistyped 'acmee' is the point)."""
    clock = [1000.0]
    recorder = TrafficRecorder(clock=lambda: clock[0], wall_clock=lambda: 1.7e9 + clock[0])
    rng = random.Random(5)
    for i in range(300):
        clock[0] += rng.expovariate(5.0)
        request = Request(id=f"r{i}", tenant_id="acme", component="ingester", query="up")
        recorder.on_enqueued(request)
        recorder.on_dispatched(request, "q-1", 0, 0.0)
        recorder.on_completed(request)
    return recorder


@pytest.fixture
def recent_traffic(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = _recorded()

    async def capture(window: int) -> LiveCapture:
        return LiveCapture(recorder.capture(window), (("q-1", 4),), {})

    monkeypatch.setattr(simulate_view, "capture_on_loop", capture)


@pytest.fixture(params=[False, True], ids=["in-process", "worker-process"])
def where(request: pytest.FixtureRequest, settings: Any) -> Iterator[None]:
    settings.SIMULATION_IN_WORKER_PROCESS = request.param
    settings.SIMULATION_WORKERS = 1
    yield
    simulation.pool.close()


def test_every_unknown_proposed_tenant_is_named_at_its_id(viewer_api, recent_traffic, where):
    response = viewer_api.post(URL, BODY, format="json")
    assert response.status_code == 400, response.content
    body = response.json()
    assert set(body) == {"proposed"}
    tenants = body["proposed"]["tenants"]
    assert set(tenants) == {"nobody1", "nobody2", "acmee"}
    for tenant_id, messages in tenants.items():
        (message,) = messages
        assert message.startswith(f"no tenant {tenant_id!r} is configured or sent traffic")
        assert message.endswith("tenants here: acme")


def test_a_known_tenant_beside_unknown_ones_is_not_named(viewer_api, recent_traffic, where):
    body = {**BODY, "proposed": {"tenants": {"acme": {}, "ghost.1": {}, "ghost-2": None}}}
    response = viewer_api.post(URL, body, format="json")
    assert response.status_code == 400, response.content
    # A dotted ID stays one key, as the scenario's answer nests it.
    assert set(response.json()["proposed"]["tenants"]) == {"ghost.1", "ghost-2"}
    ok = viewer_api.post(URL, {**BODY, "proposed": {"tenants": {"acme": {}}}}, format="json")
    assert ok.status_code == 200, ok.content
