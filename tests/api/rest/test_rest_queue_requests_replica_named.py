"""A lookup or cancel by id across replicas: which replica holds it, and `replica=`.

Two replicas here are two runtimes in this process: replica-a's host (the
`runtime` fixture's) asks replica-b's directly, as the channel layer would
carry the question (`Linked`), and the board says replica-b is live.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from api.cluster.replica_board import ReplicaBoard
from api.store.models import OperatorCancel
from api.wire import queue_peers, runtime_host
from api.wire.queue_peers import UNHEARD_NOTE, QueuePeers
from scheduler_core.model import Request
from scheduler_core.runtime import SchedulerRuntime
from tests.api.cluster.replica_summaries import encoded
from tests.api.rest import test_rest_queue_requests as listing
from tests.fakes import BareHost, FakeClock

runtime = listing.runtime  # the fixture: replica-a's runtime, its host started


class Linked(QueuePeers):
    """Asks the other replicas' `QueuePeers` in this process; a name not here does not answer."""

    def __init__(self, host: Any, own: str, others: dict[str, QueuePeers]) -> None:
        super().__init__(host)
        self.own = own
        self.others = others

    async def ask(
        self,
        op: str,
        args: dict[str, Any],
        peers: list[str] | None = None,
        target: str | None = None,
    ) -> tuple[dict[str, Any], list[str]]:
        asked = [target] if target is not None else peers
        if asked is None:
            asked = queue_peers.live_peers()
        replies = {n: await self.others[n].answer(op, args) for n in asked if n in self.others}
        missing = set(asked) - replies.keys()
        if peers is None and target is None:
            missing |= set(queue_peers.down_peers())
        return replies, sorted(missing)


@pytest.fixture
def replica_b(runtime: SchedulerRuntime, board: ReplicaBoard) -> SchedulerRuntime:
    """replica-b, live, holding a request under the id replica-a's first one has."""
    other = SchedulerRuntime(clock=FakeClock(1000.0))
    other.enqueue(Request(id="ws:c1:0", tenant_id="gamma", query="up"))
    other_peers = QueuePeers(BareHost(other))
    other_peers.own = "replica-b"
    host = runtime_host.get_host()
    host.queue_peers = Linked(host, "replica-a", {"replica-b": other_peers})
    board.accept([encoded("replica-b", time.time())], [0.0])
    return other


def test_a_lookup_of_an_id_two_replicas_hold_is_a_409_naming_them_not_this_replica_s_request(
    viewer_api, runtime, replica_b
):
    """The cancel of that id was refused so; the lookup answered with this replica's row."""
    url = "/api/v1/queue/requests/ws:c1:0/"
    refused = viewer_api.get(url)
    assert refused.status_code == 409, refused.json()
    assert refused.json() == {
        "detail": "request ws:c1:0 is on replicas replica-a, replica-b (ids repeat across "
        "replicas): give replica to look at one",
        "replicas": ["replica-a", "replica-b"],
    }
    assert viewer_api.get(url, {"replica": "replica-b"}).json()["tenant"] == "gamma"
    assert viewer_api.get(url, {"replica": "replica-a"}).json()["tenant"] == "acme"
    # An id one replica holds is found wherever it is.
    assert viewer_api.get("/api/v1/queue/requests/ws:c1:3/").json()["tenant"] == "beta"


def test_a_replica_named_that_no_replica_is_is_a_404_naming_it_and_cancels_nothing(
    viewer_api, editor_api, runtime, replica_b, board
):
    """It waited the peer timeout, then a 503 said the replica 'did not answer'."""
    now = time.time()
    board.note_registry({"replica-c": now - 60}, now)  # down: stopped publishing
    expected = {
        "detail": "no replica named 'no-such-replica'; known: replica-a, replica-b, replica-c",
        "replica": "no-such-replica",
        "replicas": ["replica-a", "replica-b", "replica-c"],
    }
    url = "/api/v1/queue/requests/ws:c1:3/"
    looked = viewer_api.get(url, {"replica": "no-such-replica"})
    assert (looked.status_code, looked.json()) == (404, expected)
    body = {"replica": "no-such-replica"}
    cancelled = editor_api.post(f"{url}cancel/", body, format="json")
    assert (cancelled.status_code, cancelled.json()) == (404, expected)
    assert len(runtime.queue) == 5 and len(replica_b.queue) == 1
    assert not OperatorCancel.objects.exists()
    # A known peer that does not answer may hold it: still a 503 naming it.
    down = viewer_api.get(url, {"replica": "replica-c"})
    assert down.status_code == 503 and down.json()["replicas_missing"] == ["replica-c"]


def test_a_lone_replica_answers_a_replica_named_other_than_itself_with_a_404_not_its_own_row(
    viewer_api, editor_api, runtime, board
):
    url = "/api/v1/queue/requests/ws:c1:3/"
    looked = viewer_api.get(url, {"replica": "no-such-replica"})
    assert looked.status_code == 404
    assert looked.json()["detail"] == "no replica named 'no-such-replica'; known: replica-a"
    cancelled = editor_api.post(f"{url}cancel/", {"replica": "no-such-replica"}, format="json")
    assert cancelled.status_code == 404 and cancelled.json()["replica"] == "no-such-replica"
    assert len(runtime.queue) == 5 and not OperatorCancel.objects.exists()
    assert viewer_api.get(url, {"replica": "replica-a"}).json()["tenant"] == "beta"


def test_a_replica_named_before_this_one_heard_of_its_peers_is_a_503_not_this_replica_s_row(
    viewer_api, runtime, board, settings
):
    """It may be a peer not heard of yet: neither this replica's request nor a 404."""
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    looked = viewer_api.get("/api/v1/queue/requests/ws:c1:3/", {"replica": "replica-b"})
    assert looked.status_code == 503 and UNHEARD_NOTE in looked.json()["detail"]
