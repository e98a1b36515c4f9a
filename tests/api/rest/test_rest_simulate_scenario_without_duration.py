"""`simulate/`: a duration for mimir-slow-consumer is a 400 at its knob, not ignored."""

from __future__ import annotations

from typing import Any

import pytest

URL = "/api/v1/simulate/"
MIMIR = {"kind": "scenario", "name": "mimir-slow-consumer"}


@pytest.fixture(autouse=True)
def _in_process(settings: Any) -> None:
    settings.SIMULATION_IN_WORKER_PROCESS = False


def test_a_duration_for_mimir_slow_consumer_is_refused_at_its_knob(viewer_api):
    response = viewer_api.post(
        URL, {"workload": MIMIR, "knobs": {"duration_seconds": 5}}, format="json"
    )
    assert response.status_code == 400, response.content
    (message,) = response.json()["knobs"]["duration_seconds"]
    assert message.startswith("the mimir-slow-consumer scenario has no duration")


def test_without_one_it_runs_and_says_it_had_none(viewer_api):
    body = {"workload": MIMIR, "knobs": {"duration_seconds": None, "arrival_factor": 0.1}}
    response = viewer_api.post(URL, body, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["workload"]["duration_seconds"] is None
