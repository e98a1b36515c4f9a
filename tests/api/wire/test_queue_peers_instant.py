"""A dry run's instant across replicas: each takes only what was enqueued by that moment.

Two replicas' hosts on one in-memory channel layer (the `pair` of
test_queue_peers.py). Their fake clocks move together and the wall clock
(`queue_rows.wall_clock`) with them, so "the same moment" is exact here; a
peer whose clock runs apart is given by its measured skew on the board.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import pytest

from api.cluster import replica_board
from api.wire import queue_rows
from api.wire.queue_merged import merged
from api.wire.queue_rows import RequestFilter
from scheduler_core.model import Request
from tests.api.cluster.replica_summaries import encoded
from tests.api.wire.test_queue_peers import pair  # noqa: F401 - the fixture

BASE = float(int(time.time()) - 1000)  # unix seconds at which the fake clocks read 0


def at(hosts: dict[str, Any], now: float) -> None:
    for host in hosts.values():
        host.runtime.clock.now = now


def enqueue(host: Any, *ids: str) -> None:
    for rid in ids:
        host.runtime.enqueue(Request(id=rid, tenant_id="t", query=f"q {rid}"))


def queued(host: Any) -> list[str]:
    return [r.id for r in host.runtime.queue.listing().queued()]


@pytest.fixture
def walls(pair: Any, monkeypatch: pytest.MonkeyPatch) -> Any:  # noqa: F811 - the fixture
    hosts, peers = pair
    monkeypatch.setattr(queue_rows, "wall_clock", lambda: BASE + hosts["r-a"].runtime.clock())
    return hosts, peers


@pytest.mark.parametrize("narrowing", [{}, {"search": "q"}], ids=["counters", "scan"])
async def test_a_count_across_replicas_and_its_cancel_leave_what_arrived_on_any_after_it(
    walls: Any, narrowing: dict[str, Any]
) -> None:
    hosts, peers = walls
    at(hosts, 100.0)
    enqueue(hosts["r-a"], "a0", "a1")
    enqueue(hosts["r-b"], "b0", "b1")
    at(hosts, 101.0)
    flt = RequestFilter(tenant="t", **narrowing)
    assert await merged.count_as_of(peers["r-a"], flt) == (4, BASE + 101.0, ["r-a", "r-b"], [])
    at(hosts, 102.0)
    enqueue(hosts["r-a"], "a-late")
    enqueue(hosts["r-b"], "b-late")
    at(hosts, 103.0)
    confirmed = RequestFilter(tenant="t", enqueued_before=BASE + 101.0, **narrowing)
    counts = await merged.cancel_matching(peers["r-a"], confirmed, "op", False)
    assert counts == (4, 4, ["r-a", "r-b"], [])
    assert (queued(hosts["r-a"]), queued(hosts["r-b"])) == (["a-late"], ["b-late"])


async def test_a_peer_reads_the_instant_through_the_asker_s_measured_skew(
    walls: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """r-a's clock is 3 s behind r-b's: its instant is the same moment 3 s later on r-b."""
    hosts, peers = walls
    now = time.time()
    board = replica_board.ReplicaBoard("r-b")
    board.accept([encoded("r-a", now - 3.0)], [0.0], now)
    monkeypatch.setattr(replica_board, "_board", board)
    at(hosts, 100.0)
    enqueue(hosts["r-b"], "b-before")
    at(hosts, 102.0)
    enqueue(hosts["r-b"], "b-after")
    at(hosts, 103.0)
    # The moment r-b's wall clock read BASE + 101 is BASE + 98 on r-a's.
    mine = RequestFilter(tenant="t", enqueued_before=BASE + 98.0)
    args = {"filter": mine.as_args(), "reason": "op", "dry_run": False}
    replies, missing = await peers["r-a"].ask("cancel_matching", args, ["r-b"])
    assert (replies, missing) == ({"r-b": [1, 1]}, [])
    assert queued(hosts["r-b"]) == ["b-after"]


def test_a_filter_without_an_instant_is_asked_as_before_the_field_existed() -> None:
    """A peer on the previous version takes these keywords: an extra one failed every question."""
    before = {"tenant", "component", "priority", "state", "search", "regex"}
    before |= {"min_wait", "frontend", "actor"}
    assert RequestFilter(tenant="t").as_args().keys() == before
    assert RequestFilter(enqueued_before=5.0).as_args()["enqueued_before"] == 5.0
    # And a cursor handed out before it still reads as the same filter's.
    flt = RequestFilter(tenant="t")
    old = json.dumps({k: getattr(flt, k) for k in before}, sort_keys=True, separators=(",", ":"))
    assert flt.fingerprint() == hashlib.sha256(old.encode()).hexdigest()[:12]
