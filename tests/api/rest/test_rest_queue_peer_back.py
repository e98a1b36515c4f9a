"""A peer down when a cross-replica question left, back before its answers are in.

A question about the queue goes to the whole group; the asker waits for
the live peers and names the down ones missing. One whose summary turns
fresh while the asker waits (the summaries pass runs on the same loop) was
in neither list: not waited for, no longer down. Its answer, if it gave
one, was dropped (a cancel it did went uncounted and unrecorded), and the
answer passed for the whole service's.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from api.cluster.replica_board import ReplicaBoard
from api.store.models import OperatorCancel
from api.wire import queue_peers, runtime_host
from api.wire.queue_peers import QueuePeers
from tests.api.cluster.replica_summaries import encoded


@pytest.fixture
def host(running: Any, settings: Any, board: ReplicaBoard, monkeypatch: pytest.MonkeyPatch) -> Any:
    """replica-a (this one; one request of team-a queued), replica-c live, replica-b hung."""
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    now = time.time()
    board.accept([encoded("replica-c", now)], [0.0], now)
    board.note_registry({"replica-a": now, "replica-b": now - 10, "replica-c": now}, now)
    assert (queue_peers.live_peers(), queue_peers.down_peers()) == (["replica-c"], ["replica-b"])
    host = runtime_host.get_host()
    host.queue_peers = QueuePeers(host)
    host.queue_peers.channel = "replica-a-channel"
    monkeypatch.setattr(queue_peers, "get_channel_layer", lambda: object())
    return host


def _group(monkeypatch: pytest.MonkeyPatch, host: Any, board: ReplicaBoard, b_back: bool) -> None:
    """The group: c answers each question; b, if back, publishes while the asker waits, answers."""

    async def send_and_wait(layer: Any, message: dict[str, Any], done: Any) -> None:
        replies = host.queue_peers._waiting[message["rid"]][1]
        if message.get("target"):  # a page of one replica's rows
            replies[message["target"]] = {"rows": [], "next": None, "total": 0}
            return
        if b_back:
            now = time.time()
            board.accept([encoded("replica-b", now), encoded("replica-c", now)], [0.0, 0.0], now)
            replies["replica-b"] = [2, 2] if message["op"] == "cancel_matching" else [5, 0]
        replies["replica-c"] = [3, 3] if message["op"] == "cancel_matching" else [0, 0]

    monkeypatch.setattr(QueuePeers, "_send_and_wait", staticmethod(send_and_wait))


@pytest.mark.parametrize("b_back", [False, True])
def test_a_cancel_counts_a_peer_back_in_time_and_names_one_still_down(
    editor_api, host, board, monkeypatch, b_back
):
    _group(monkeypatch, host, board, b_back)
    body = editor_api.post("/api/v1/queue/cancel/", {"tenant": "team-a"}, format="json").json()
    record = OperatorCancel.objects.get()
    if b_back:
        assert (body["cancelled"], body["replicas"], body["replicas_missing"]) == (
            6,
            ["replica-a", "replica-b", "replica-c"],
            [],
        )
        assert record.replicas == ["replica-a", "replica-b", "replica-c"]
    else:
        assert (body["cancelled"], body["replicas"], body["replicas_missing"]) == (
            4,
            ["replica-a", "replica-c"],
            ["replica-b"],
        )


def test_a_listing_counts_and_names_a_peer_back_in_time(viewer_api, host, board, monkeypatch):
    _group(monkeypatch, host, board, b_back=True)
    body = viewer_api.get("/api/v1/queue/requests/").json()
    assert body["total"] == 6
    assert (body["replicas"], body["replicas_missing"]) == (
        ["replica-a", "replica-b", "replica-c"],
        [],
    )
