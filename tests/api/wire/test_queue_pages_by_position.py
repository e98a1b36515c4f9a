"""A listing's last page is decided by its position, and `replica=` must name a replica.

A page counted the rows handed out on earlier pages and compared them with
the current total: once rows of earlier pages left the queue, a page in the
middle said it was the last (`next` null) while requests after it still
waited. A lookup by an id two replicas hold answered with this replica's
request; a `replica=` naming no replica waited the peer timeout for a 503.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from api.wire import queue_peers
from api.wire.queue_merged import AmbiguousRequest, UnknownReplica, merged
from api.wire.queue_requests import list_page
from api.wire.queue_rows import RequestFilter
from scheduler_core.model import Request
from scheduler_core.runtime import SchedulerRuntime
from tests.api.wire.test_queue_peers import fill, pair  # noqa: F401 - the fixture
from tests.fakes import FakeClock


def ids(rows: list[dict[str, Any]]) -> list[str]:
    return [row["id"] for row in rows]


async def _page(runtime: SchedulerRuntime, flt: RequestFilter, cursor: str | None, limit: int):
    return await list_page(runtime, flt, cursor=cursor, limit=limit, replica="r-a", names={})


@pytest.mark.parametrize(
    "flt",
    [
        RequestFilter(tenant="pg", state="queued"),
        RequestFilter(tenant="pg"),  # queued, then running (none)
        RequestFilter(tenant="pg", state="queued", search="q r"),  # a scan, not counters
    ],
    ids=["queued", "any-state", "search"],
)
async def test_a_page_after_earlier_rows_left_still_leads_on_to_the_requests_queued_after_it(
    flt: RequestFilter,
) -> None:
    runtime = SchedulerRuntime(clock=FakeClock(100.0))
    for i in range(8):
        runtime.enqueue(Request(id=f"r{i}", tenant_id="pg", query=f"q r{i}"))
    first = await _page(runtime, flt, None, 4)
    assert ids(first.rows) == ["r0", "r1", "r2", "r3"] and first.next is not None
    for i in range(4):
        runtime.queue.cancel(f"r{i}")
    second = await _page(runtime, flt, first.next, 2)
    assert ids(second.rows) == ["r4", "r5"] and second.total == 4
    assert second.next is not None, "r6 and r7 are still queued"
    # Full again, and nothing after it: the last page, not one empty page more.
    third = await _page(runtime, flt, second.next, 2)
    assert ids(third.rows) == ["r6", "r7"] and third.next is None


async def test_a_merged_page_after_earlier_rows_left_still_leads_on_to_the_other_replica(
    pair: Any,  # noqa: F811 - the fixture
) -> None:
    hosts, peers = pair
    fill(hosts["r-a"], "a", 5)
    fill(hosts["r-b"], "b", 4)
    queue = hosts["r-a"].runtime.queue
    worker = queue.connect_querier("q-1")
    queue.dequeue("q-1", worker)  # a0 runs
    flt = RequestFilter(tenant="t")
    first = await merged.page(peers["r-a"], flt, None, 4)
    assert ids(first["results"]) == ["a1", "a2", "a3", "a4"] and first["next"] is not None
    for i in range(1, 5):
        queue.cancel(f"a{i}")
    second = await merged.page(peers["r-a"], flt, first["next"], 2)
    assert ids(second["results"]) == ["b0", "b1"] and second["total"] == 5
    assert second["next"] is not None, "b2, b3 are still queued and a0 runs"
    # Full at the end of r-b's queued rows: r-a's running one follows.
    third = await merged.page(peers["r-a"], flt, second["next"], 2)
    assert ids(third["results"]) == ["b2", "b3"] and third["next"] is not None
    last = await merged.page(peers["r-a"], flt, third["next"], 2)
    assert ids(last["results"]) == ["a0"] and last["next"] is None
    # Nothing runs: a page full at the end of the queued rows is the last,
    # the running steps after it empty by each replica's split count.
    hosts["r-a"].runtime.fail("a0", "by op")
    again = await merged.page(peers["r-a"], flt, second["next"], 2)
    assert ids(again["results"]) == ["b2", "b3"] and again["next"] is None


async def test_a_lookup_of_an_id_two_replicas_hold_names_them_rather_than_answer_with_one(
    pair: Any,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Websocket ids restart in every process: each replica answered with its own request."""
    hosts, peers = pair
    fill(hosts["r-a"], "x", 1)
    fill(hosts["r-b"], "x", 1)
    for asker, other in (("r-b", "r-a"), ("r-a", "r-b")):
        monkeypatch.setattr(queue_peers, "live_peers", lambda other=other: [other])
        with pytest.raises(AmbiguousRequest) as refused:
            await merged.find(peers[asker], "x0", None)
        assert refused.value.replicas == ["r-a", "r-b"]
        assert "give replica to look at one" in str(refused.value)
    row, missing = await merged.find(peers["r-a"], "x0", "r-b")
    assert row is not None and row["replica"] == "r-b" and missing == []
    row, _ = await merged.find(peers["r-a"], "x0", "r-a")
    assert row is not None and row["replica"] == "r-a"
    # One holder, wherever it is: its row.
    fill(hosts["r-b"], "b", 1)
    row, _ = await merged.find(peers["r-a"], "b0", None)
    assert row is not None and row["replica"] == "r-b"


async def test_a_replica_named_that_no_replica_is_is_refused_at_once_and_cancels_nothing(
    pair: Any,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """It waited the peer timeout, then said the replica 'did not answer' (a 503)."""
    hosts, peers = pair
    fill(hosts["r-a"], "a", 1)
    monkeypatch.setattr(queue_peers, "down_peers", lambda: ["r-hung"])
    started = time.monotonic()
    with pytest.raises(UnknownReplica) as looked:
        await merged.find(peers["r-a"], "a0", "no-such-replica")
    with pytest.raises(UnknownReplica) as cancelled:
        await merged.cancel_one(peers["r-a"], "a0", "by op", "no-such-replica")
    assert time.monotonic() - started < 0.4  # the fixture's peer timeout is 0.5 s
    for refused in (looked.value, cancelled.value):
        assert refused.replica == "no-such-replica"
        assert refused.known == ["r-a", "r-b", "r-hung"]
        assert str(refused) == "no replica named 'no-such-replica'; known: r-a, r-b, r-hung"
    assert len(hosts["r-a"].runtime.queue) == 1
    # A known peer that does not answer is still one that may hold it (503 above).
    assert await merged.find(peers["r-a"], "a0", "r-hung") == (None, ["r-hung"])
