"""A scale-out replica that has not heard of its peers yet says so on every queue answer.

Its board learns the peers from the summaries loop's first registry read,
a moment after the runtime starts: answers before it (and while Redis has
been unreachable since) must not pass for a lone replica's. The same
answers with two real replicas are in tests/service/test_queue_replicas_first_answer.py.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from api.cluster.replica_board import ReplicaBoard
from api.wire import queue_requests, runtime_host
from api.wire.queue_peers import UNHEARD_NOTE

UNHEARD_BLOCK = {
    "count": 1,
    "ids": ["replica-a"],
    "missing": [],
    "peers_max_age": 0.0,
    "note": UNHEARD_NOTE,
}
BLOCK_PATHS = ["/api/v1/queue/", "/api/v1/queriers/", "/api/v1/queue/usage/"]


@pytest.fixture
def scale_out(settings: Any) -> None:
    settings.REDIS_URL = "redis://127.0.0.1:1/0"


@pytest.mark.parametrize("path", BLOCK_PATHS)
def test_an_answer_before_the_first_registry_read_carries_a_block_saying_so(
    viewer_api, scale_out, running, board, path
):
    body = viewer_api.get(path).json()
    assert body["running"] is True
    assert body["replicas"] == UNHEARD_BLOCK


def test_a_listing_before_the_first_registry_read_names_this_replica_and_says_so(
    viewer_api, scale_out, running, board
):
    body = viewer_api.get("/api/v1/queue/requests/").json()
    assert [row["id"] for row in body["results"]] == ["r1"]
    assert (body["replicas"], body["replicas_missing"]) == (["replica-a"], [])
    assert body["replicas_note"] == UNHEARD_NOTE


@pytest.mark.parametrize("path", [*BLOCK_PATHS, "/api/v1/queue/requests/"])
def test_an_answer_before_the_runtime_started_says_the_peers_are_unheard_too(
    viewer_api, scale_out, board, path
):
    body = viewer_api.get(path).json()
    assert body["running"] is False
    note = body["replicas"]["note"] if "note" in body["replicas"] else body["replicas_note"]
    assert note == UNHEARD_NOTE


@pytest.mark.parametrize("path", [*BLOCK_PATHS, "/api/v1/queue/requests/"])
def test_an_answer_the_first_registry_read_lands_in_the_middle_of_still_says_unheard(
    viewer_api, scale_out, board: ReplicaBoard, monkeypatch: pytest.MonkeyPatch, path
):
    # The read lands after the view asked whether the runtime runs and before
    # it wrote the answer (a CI run caught a first answer with no block).
    def read_lands() -> bool:
        board.note_registry({"replica-b": time.time()}, time.time())
        return False

    monkeypatch.setattr(runtime_host, "started", read_lands)
    body = viewer_api.get(path).json()
    assert body["running"] is False
    note = body["replicas"]["note"] if "note" in body["replicas"] else body["replicas_note"]
    assert note == UNHEARD_NOTE


@pytest.mark.parametrize("path", [*BLOCK_PATHS, "/api/v1/queue/requests/"])
def test_a_replica_that_read_the_registry_and_found_no_peer_answers_as_a_lone_one(
    viewer_api, scale_out, running, board, path
):
    board.note_registry({}, time.time())
    body = viewer_api.get(path).json()
    assert body["running"] is True
    assert not {"replicas", "replicas_missing", "replicas_note"} & body.keys()


@pytest.mark.parametrize("path", [*BLOCK_PATHS, "/api/v1/queue/requests/"])
def test_without_redis_no_answer_carries_a_replicas_block(viewer_api, running, board, path):
    body = viewer_api.get(path).json()
    assert not {"replicas", "replicas_missing", "replicas_note"} & body.keys()


def test_a_peer_known_before_redis_failed_is_named_missing_not_unheard(
    viewer_api, scale_out, running, board: ReplicaBoard
):
    board.note_registry({"replica-b": time.time()}, time.time())
    board.lost_redis()
    block = viewer_api.get("/api/v1/queue/").json()["replicas"]
    assert (block["ids"], block["missing"], block["note"]) == (["replica-a"], ["replica-b"], "")


def test_a_lookup_of_an_id_not_here_is_a_503_while_the_peers_are_unheard_then_a_404(
    viewer_api, scale_out, running, board: ReplicaBoard
):
    unheard = viewer_api.get("/api/v1/queue/requests/elsewhere/")
    assert unheard.status_code == 503
    assert UNHEARD_NOTE in unheard.json()["detail"]
    assert viewer_api.get("/api/v1/queue/requests/r1/").status_code == 200

    board.note_registry({}, time.time())
    assert viewer_api.get("/api/v1/queue/requests/elsewhere/").status_code == 404


def test_a_cancel_by_filter_while_the_peers_are_unheard_says_it_reached_this_replica_only(
    editor_api, scale_out, running, board: ReplicaBoard
):
    body = {"tenant": "team-a", "dry_run": True}
    answer = editor_api.post("/api/v1/queue/cancel/", body, format="json").json()
    assert (answer["matched"], answer["replicas"], answer["replicas_missing"]) == (
        1,
        ["replica-a"],
        [],
    )
    assert answer["replicas_note"] == UNHEARD_NOTE

    board.note_registry({}, time.time())
    answer = editor_api.post("/api/v1/queue/cancel/", body, format="json").json()
    assert answer == {"matched": 1, "cancelled": 0, "as_of": answer["as_of"]}


@pytest.mark.parametrize("step", ["find_row", "cancel_one"])
def test_a_lookup_the_first_registry_read_lands_during_is_a_503_not_a_404(
    editor_api, scale_out, running, board: ReplicaBoard, monkeypatch: pytest.MonkeyPatch, step
):
    # A 404 reads "already gone": a script would not retry a cancel of a
    # request the peer it had not heard of yet holds and still runs.
    original = getattr(queue_requests, step)

    def looked_then_read_lands(*args: Any, **kwargs: Any) -> Any:
        found = original(*args, **kwargs)
        board.note_registry({"replica-b": time.time()}, time.time())
        return found

    monkeypatch.setattr(queue_requests, step, looked_then_read_lands)
    if step == "find_row":
        response = editor_api.get("/api/v1/queue/requests/held-by-b/")
    else:
        response = editor_api.post("/api/v1/queue/requests/held-by-b/cancel/", {}, format="json")
    assert response.status_code == 503, response.json()
    assert UNHEARD_NOTE in response.json()["detail"]
