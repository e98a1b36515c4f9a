"""The live drill-down across replicas: the peers' rows merged into the local page.

A fake peer link answers "page" questions as `api.wire.queue_peers` would
(REST rows of `api.wire.queue_rows.request_row`); the clocks are fakes.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from api.wire.queue_rows import QUERY_LINE_LIMIT, RequestFilter
from dashboard.drill import DrillParams
from dashboard.peer_drills import FORGET_SECONDS, PeerDrills
from tests.fakes import FakeClock

PARAMS = DrillParams(RequestFilter(tenant="acme"), limit=50)


def api_row(replica: str, rid: str, *, wait: float, running: float | None = None) -> dict[str, Any]:
    return {
        "id": rid,
        "client_id": rid,
        "tenant": "acme",
        "component": "ingester",
        "priority": 0,
        "rule": {"priority_index": 0, "attribute_index": 1},
        "source": "rule",
        "query": "sum(rate(x[5m]))\nby (job)",
        "query_truncated": False,
        "api_type": "query",
        "start": None,
        "end": None,
        "step": None,
        "state": "queued" if running is None else "in_flight",
        "wait_seconds": wait,
        "attempts": 1,
        "querier": None if running is None else "q1",
        "worker": None if running is None else 0,
        "running_seconds": running,
        "frontend": {"transport": "websocket", "address": "10.0.0.9:1", "name": "fe"},
        "replica": replica,
        "actor": "users|joe",
    }


class FakePeers:
    """Answers every question with `answers` (replica -> body); names `missing`."""

    def __init__(self) -> None:
        self.answers: dict[str, Any] = {}
        self.missing: list[str] = []
        self.asked: list[dict[str, Any]] = []

    async def ask(self, op: str, args: dict[str, Any], peers: list[str] | None = None) -> Any:
        assert op == "page"
        # No list: every live peer, the down ones named missing (QueuePeers.ask).
        assert peers is None
        self.asked.append(args)
        return dict(self.answers), list(self.missing)


def local_page(*rows: tuple[str, str], queued: int) -> dict[str, Any]:
    return {"rows": list(rows), "queued_rows": queued, "total": len(rows), "exact": True}


def keys(page: dict[str, Any]) -> list[str]:
    return [key for key, _ in page["rows"]]


async def settle() -> None:
    for _ in range(3):
        await asyncio.sleep(0)


async def test_peers_rows_join_queued_first_replica_by_replica_and_a_silent_one_is_named() -> None:
    clock, wall = FakeClock(0.0), FakeClock(1_000.0)
    drills, peers = PeerDrills(clock, wall), FakePeers()
    local = local_page(("replica-b/l1", "[]"), ("replica-b/l2", "[]"), queued=1)
    first = drills.merge(PARAMS, local, "replica-b", peers)
    assert keys(first) == ["replica-b/l1", "replica-b/l2"] and first["replicas_pending"]

    peers.answers = {
        "replica-a": {"rows": [api_row("replica-a", "a1", wait=3.0)], "total": 7},
        "replica-c": {
            "rows": [
                api_row("replica-c", "c1", wait=1.0),
                api_row("replica-c", "c2", wait=2.0, running=4.0),
            ],
            "total": 2,
        },
        "replica-d": {"error": "failed"},
    }
    peers.missing = ["replica-e"]
    await settle()
    assert peers.asked[0]["query_limit"] == QUERY_LINE_LIMIT + 1  # the first line is enough
    assert peers.asked[0]["filter"]["tenant"] == "acme"
    clock.now = 2.0
    page = drills.merge(PARAMS, local, "replica-b", peers)
    await settle()  # the next question goes out in the background
    assert keys(page) == [
        "replica-a/a1", "replica-b/l1", "replica-c/c1",  # queued, by replica
        "replica-b/l2", "replica-c/c2",  # then running
    ]  # fmt: skip
    assert page["total"] == 2 + 7 + 2
    assert page["replicas_missing"] == ["replica-d", "replica-e"]
    assert "replicas_pending" not in page
    assert "serving" not in page  # none in the local page: none made up
    local["serving"] = {"shard": ["q1"], "queriers": 2, "reserved": []}
    assert drills.merge(PARAMS, local, "replica-b", peers)["serving"] == local["serving"]
    del local["serving"]
    row = json.loads(dict(page["rows"])["replica-c/c2"])
    assert row[0] == "c2" and row[5] == [0, 1] and row[6] == "r"
    assert (row[7], row[8]) == ("sum(rate(x[5m]))", True)  # first line; there is more
    assert row[13] == "f" and row[14] == 1_000.0 - 4.0 - 2.0 and row[18] == 996.0
    assert (row[22], row[23]) == ("replica-c", "users|joe")


async def test_a_count_finished_over_ticks_keeps_its_instant_when_the_peers_join() -> None:
    drills, peers = PeerDrills(FakeClock(0.0), FakeClock(1_000.0)), FakePeers()
    local = {**local_page(queued=0), "exact": False, "total": 40, "counted_at": 998.5}
    peers.answers = {"replica-a": {"rows": [], "total": 2}}
    drills.merge(PARAMS, local, "replica-b", peers)
    await settle()
    page = drills.merge(PARAMS, local, "replica-b", peers)
    assert (page["total"], page["exact"], page["counted_at"]) == (42, False, 998.5)
    del local["counted_at"]
    assert "counted_at" not in drills.merge(PARAMS, local, "replica-b", peers)


async def test_an_unchanged_peer_row_keeps_its_bytes_from_one_answer_to_the_next() -> None:
    clock, wall = FakeClock(0.0), FakeClock(1_000.0)
    drills, peers = PeerDrills(clock, wall), FakePeers()
    local = local_page(queued=0)
    peers.answers = {"replica-a": {"rows": [api_row("replica-a", "a1", wait=3.0)], "total": 1}}
    drills.merge(PARAMS, local, "replica-b", peers)
    await settle()
    before = drills.merge(PARAMS, local, "replica-b", peers)["rows"]
    # One second on, the peer measures a wait one second (and a little) longer.
    clock.now, wall.now = 1.5, 1_001.0
    peers.answers = {"replica-a": {"rows": [api_row("replica-a", "a1", wait=4.013)], "total": 1}}
    drills.merge(PARAMS, local, "replica-b", peers)
    await settle()
    after = drills.merge(PARAMS, local, "replica-b", peers)["rows"]
    assert len(peers.asked) == 2  # asked at most once a second
    assert after == before


async def test_a_drill_nobody_looks_at_is_forgotten() -> None:
    clock = FakeClock(0.0)
    drills, peers = PeerDrills(clock, FakeClock(1_000.0)), FakePeers()
    peers.answers = {"replica-a": {"rows": [api_row("replica-a", "a1", wait=3.0)], "total": 1}}
    drills.merge(PARAMS, local_page(queued=0), "replica-b", peers)
    await settle()
    other = DrillParams(RequestFilter(tenant="beta"))
    clock.now = FORGET_SECONDS + 1
    drills.merge(other, local_page(queued=0), "replica-b", peers)
    again = drills.merge(PARAMS, local_page(queued=0), "replica-b", peers)
    assert again["replicas_pending"] and again["rows"] == []
