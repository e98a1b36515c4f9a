"""QueuePeers: two replicas' hosts on one in-memory channel layer, asking each other."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from api.wire import queue_peers
from api.wire.queue_merged import AmbiguousRequest, merged
from api.wire.queue_peers import QueuePeers
from api.wire.queue_rows import RequestFilter
from scheduler_core.model import Request
from scheduler_core.runtime import SchedulerRuntime
from tests.fakes import BareHost, FakeClock


@pytest.fixture
async def pair(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    hosts = {r: BareHost(SchedulerRuntime(clock=FakeClock(100.0))) for r in ("r-a", "r-b")}
    peers = {}
    for name, host in hosts.items():
        p = QueuePeers(host)
        p.own = name
        peers[name] = p
    tasks = [asyncio.create_task(p.serve()) for p in peers.values()]
    while not all(p.channel for p in peers.values()):
        await asyncio.sleep(0)
    monkeypatch.setattr(queue_peers, "live_peers", lambda: ["r-b"])
    settings.QUEUE_PEER_TIMEOUT = 0.5
    yield hosts, peers
    for task in tasks:
        task.cancel()
    channel_layers.backends.clear()


def fill(host: BareHost, prefix: str, n: int) -> None:
    for i in range(n):
        host.runtime.enqueue(Request(id=f"{prefix}{i}", tenant_id="t", query=f"q {prefix}{i}"))


async def test_a_merged_page_takes_each_replica_in_turn_and_counts_them_all(pair: Any) -> None:
    hosts, peers = pair
    fill(hosts["r-a"], "a", 3)
    fill(hosts["r-b"], "b", 2)
    page = await merged.page(peers["r-a"], RequestFilter(tenant="t"), None, 4)
    assert [r["id"] for r in page["results"]] == ["a0", "a1", "a2", "b0"]
    assert [r["replica"] for r in page["results"]] == ["r-a"] * 3 + ["r-b"]
    assert page["total"] == 5 and page["replicas"] == ["r-a", "r-b"]
    rest = await merged.page(peers["r-a"], RequestFilter(tenant="t"), page["next"], 4)
    assert [r["id"] for r in rest["results"]] == ["b1"] and rest["next"] is None


async def test_cancels_reach_the_replica_holding_the_request(pair: Any) -> None:
    hosts, peers = pair
    fill(hosts["r-a"], "a", 2)
    fill(hosts["r-b"], "b", 2)
    row, missing = await merged.cancel_one(peers["r-a"], "b1", "by op", None)
    assert row is not None and row["replica"] == "r-b" and missing == []
    assert len(hosts["r-b"].runtime.queue) == 1
    found, _ = await merged.find(peers["r-a"], "b0", None)
    assert found is not None and found["replica"] == "r-b"
    counts = await merged.cancel_matching(peers["r-a"], RequestFilter(tenant="t"), "op", False)
    assert counts == (3, 3, ["r-a", "r-b"], [])


async def test_a_replica_that_does_not_answer_is_named(
    pair: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    hosts, peers = pair
    fill(hosts["r-a"], "a", 1)
    monkeypatch.setattr(queue_peers, "live_peers", lambda: ["r-b", "r-gone"])
    page = await merged.page(peers["r-a"], RequestFilter(tenant="t"), None, 10)
    assert page["replicas_missing"] == ["r-gone"]
    assert [r["id"] for r in page["results"]] == ["a0"]


async def test_an_id_two_replicas_hold_is_cancelled_on_neither_without_a_replica_named(
    pair: Any,
) -> None:
    """Websocket ids restart in every process: the cancel killed both tenants' requests."""
    hosts, peers = pair
    fill(hosts["r-a"], "x", 1)
    fill(hosts["r-b"], "x", 1)
    with pytest.raises(AmbiguousRequest) as refused:
        await merged.cancel_one(peers["r-a"], "x0", "by op", None)
    assert refused.value.replicas == ["r-a", "r-b"]
    assert len(hosts["r-a"].runtime.queue) == len(hosts["r-b"].runtime.queue) == 1
    row, _ = await merged.cancel_one(peers["r-a"], "x0", "by op", "r-b")
    assert row is not None and row["replica"] == "r-b"
    assert len(hosts["r-a"].runtime.queue) == 1 and len(hosts["r-b"].runtime.queue) == 0


async def test_a_replica_that_stopped_publishing_is_named_missing_not_left_out(
    pair: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hung or killed peer: its requests are absent, so every answer must say so."""
    hosts, peers = pair
    fill(hosts["r-a"], "a", 1)
    monkeypatch.setattr(queue_peers, "live_peers", lambda: [])
    monkeypatch.setattr(queue_peers, "down_peers", lambda: ["r-hung"])
    page = await merged.page(peers["r-a"], RequestFilter(tenant="t"), None, 10)
    assert page["replicas_missing"] == ["r-hung"] and page["total"] == 1
    assert await merged.find(peers["r-a"], "nope", None) == (None, ["r-hung"])
    # Asked of every peer (as the drill-down asks), the down one is named too.
    assert await peers["r-a"].ask("count", {}) == ({}, ["r-hung"])
    assert await merged.cancel_one(peers["r-a"], "nope", "op", None) == (None, ["r-hung"])
    counts = await merged.cancel_matching(peers["r-a"], RequestFilter(tenant="t"), "op", True)
    assert counts == (1, 0, ["r-a"], ["r-hung"])


async def test_a_cancel_heard_after_its_asker_gave_up_is_dropped(pair: Any) -> None:
    """A replica hung past the asker's timeout must not cancel later, unrecorded."""
    from channels.layers import get_channel_layer

    hosts, peers = pair
    fill(hosts["r-b"], "b", 2)
    layer = get_channel_layer()
    late = {"type": "queue.ask", "rid": "late", "reply": peers["r-a"].channel, "from": "r-a"}
    args = {"id": "b0", "reason": "by op"}
    await layer.group_send(
        queue_peers.QUEUE_GROUP, {**late, "op": "cancel_one", "args": args, "expires": 1.0}
    )
    # A read asked as late is still answered: it changes nothing.
    found, missing = await merged.find(peers["r-a"], "b0", None)
    assert found is not None and missing == []
    assert len(hosts["r-b"].runtime.queue) == 2


async def test_a_stalled_channel_layer_costs_the_timeout_not_more(
    pair: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The send counted outside the timeout: a paused Redis held a listing 9 s, not 2."""
    from channels.layers import get_channel_layer

    _, peers = pair
    layer = get_channel_layer()

    async def stalled(group: str, message: dict[str, Any]) -> None:
        await asyncio.Event().wait()  # never sent

    monkeypatch.setattr(layer, "group_send", stalled)
    # The fixture's timeout is 0.5 s; before, this waited on the send for good.
    asked = peers["r-a"].ask("count", {}, ["r-b"])
    assert await asyncio.wait_for(asked, 10) == ({}, ["r-b"])


async def test_a_peer_silent_on_the_count_is_not_asked_for_rows_too(
    pair: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asked again for each phase's rows, a hung peer held a listing 6 s, not 2."""
    from channels.layers import get_channel_layer

    hosts, peers = pair
    fill(hosts["r-a"], "a", 1)
    fill(hosts["r-b"], "b", 1)
    monkeypatch.setattr(queue_peers, "live_peers", lambda: ["r-b", "r-gone"])
    layer = get_channel_layer()
    asked: list[tuple[str, str | None]] = []
    send = layer.group_send

    async def recording(group: str, message: dict[str, Any]) -> None:
        asked.append((message["op"], message["target"]))
        await send(group, message)

    monkeypatch.setattr(layer, "group_send", recording)
    page = await merged.page(peers["r-a"], RequestFilter(tenant="t"), None, 10)
    assert page["replicas_missing"] == ["r-gone"]
    assert [r["id"] for r in page["results"]] == ["a0", "b0"]
    assert asked == [("count", None), ("page", "r-b"), ("page", "r-b")]


async def test_a_cancel_from_an_asker_whose_clock_is_behind_is_not_taken_for_late(
    pair: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its deadline read on the hearer's clock: every cancel from that replica was dropped."""
    import time

    from channels.layers import get_channel_layer

    from api.cluster import replica_board
    from tests.api.cluster.replica_summaries import encoded

    hosts, peers = pair
    fill(hosts["r-b"], "b", 1)
    board = replica_board.ReplicaBoard("r-b")
    now = time.time()
    board.accept([encoded("r-a", now - 3.0)], [0.0], now)  # r-a's clock: 3 s behind
    monkeypatch.setattr(replica_board, "_board", board)
    ask = {"type": "queue.ask", "rid": "skewed", "reply": peers["r-a"].channel, "from": "r-a"}
    args = {"id": "b0", "reason": "by op"}
    # Within its 2 s on r-a's clock, though a second past on r-b's.
    message = {**ask, "op": "cancel_one", "args": args, "expires": now - 1.0, "target": "r-b"}
    await get_channel_layer().group_send(queue_peers.QUEUE_GROUP, message)
    found, missing = await merged.find(peers["r-a"], "b0", None)
    assert found is None and missing == []
    assert len(hosts["r-b"].runtime.queue) == 0
