"""`simulate/` run ids are each starter's own: another's same id neither blocks nor shows."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from rest_framework.test import APIClient

from api.rest.simulation import _Runs, runs
from api.store.tokens import api_token_issue

URL = "/api/v1/simulate/"
SEED = {"workload": {"kind": "scenario", "name": "cortex-seed"}, "knobs": {"duration_seconds": 10}}


@pytest.fixture(autouse=True)
def _in_process(settings: Any) -> None:
    settings.SIMULATION_IN_WORKER_PROCESS = False


def _client(name: str) -> tuple[APIClient, tuple[str, Any]]:
    token, plaintext = api_token_issue(name=name, role="viewer")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    return client, ("token", token.pk)


def test_a_run_id_running_for_one_user_is_free_for_another_and_hidden_from_them(db: None) -> None:
    a_client, a = _client("user-a")
    b_client, _ = _client("user-b")
    a_run = runs.start("r0", a)  # user A's "r0", still running
    assert a_run is not None
    try:
        # B is not told A's id is in use: B's own r0 runs.
        response = b_client.post(URL, {**SEED, "run_id": "r0"}, format="json")
        assert response.status_code == 200, response.content
        assert response.json()["workload"]["run_id"] == "r0"
        # B sees and cancels its own r0 only; A's runs on untouched.
        b_view = b_client.get(f"{URL}r0/")
        assert b_view.status_code == 200 and b_view.json()["state"] == "done"
        assert b_client.delete(f"{URL}r0/").status_code == 202
        assert not a_run.cancel.is_set() and a_run.state == "running"
        a_view = a_client.get(f"{URL}r0/")
        assert a_view.status_code == 200 and a_view.json()["state"] == "running"
        # A's own id is still in use for A.
        again = a_client.post(URL, {**SEED, "run_id": "r0"}, format="json")
        assert again.status_code == 409 and again.json()["code"] == "run_id_in_use"
        assert a_client.delete(f"{URL}r0/").status_code == 202
        assert a_run.cancel.is_set()
    finally:
        runs.finish(a_run, "cancelled")


def test_another_users_run_id_is_a_404_until_they_start_their_own(db: None) -> None:
    _, a = _client("user-a")
    b_client, _ = _client("user-b")
    a_run = runs.start("only-a", a)
    assert a_run is not None
    try:
        for method in (b_client.get, b_client.delete):
            response = method(f"{URL}only-a/")
            assert response.status_code == 404
            assert response.json()["detail"] == "no simulation 'only-a' of yours"
        assert not a_run.cancel.is_set()
    finally:
        runs.finish(a_run, "cancelled")


def test_each_starters_run_has_its_own_cancel_flag() -> None:
    table = _Runs()
    a_flag, b_flag = threading.Event(), threading.Event()  # each request's disconnect flag
    a_run = table.start("same", ("user", 1), a_flag)
    b_run = table.start("same", ("user", 2), b_flag)
    assert a_run is not None and b_run is not None and a_run is not b_run
    assert table.get("same", ("user", 1)) is a_run
    assert table.get("same", ("user", 2)) is b_run
    assert table.get("same", ("user", 3)) is None
    b_flag.set()  # B's client went away
    assert b_run.cancel.is_set() and not a_run.cancel.is_set()
    assert table.start("same", ("user", 1)) is None  # A's is still running
    table.finish(a_run, "done")
    assert table.start("same", ("user", 1)) is not None  # finished: the id is A's again


def test_a_second_run_of_one_starter_is_a_429_while_another_starter_still_runs(
    db: None, settings: Any
) -> None:
    a_client, a = _client("user-a")
    b_client, _ = _client("user-b")
    a_run = runs.start("long", a)  # A's run, still going
    assert a_run is not None
    try:
        refused = a_client.post(URL, SEED, format="json")
        assert refused.status_code == 429 and refused["Retry-After"] == "5"
        assert refused.json()["code"] == "starter_busy"
        assert "SIMULATION_RUNS_PER_STARTER is 1" in refused.json()["detail"]
        assert b_client.post(URL, SEED, format="json").status_code == 200
        settings.SIMULATION_RUNS_PER_STARTER = 2
        assert a_client.post(URL, SEED, format="json").status_code == 200
        settings.SIMULATION_RUNS_PER_STARTER = 1
        a_run.cancel.set()  # cancelled, its worker not yet stopped: A may start another
        assert a_client.post(URL, SEED, format="json").status_code == 200
    finally:
        runs.finish(a_run, "cancelled")
