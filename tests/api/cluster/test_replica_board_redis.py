"""Reading peers' summaries from a real Redis (TEST_REDIS_URL): their age is Redis's to tell."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from api.cluster import replica_rules
from api.cluster.replica_board import KEY_TTL_SECONDS, ReplicaBoard, publish, read_peers
from api.cluster.replica_registry import withdraw
from api.cluster.replicas import summarize
from scheduler_core.rule_stats import RuleStats
from tests.api.cluster.replica_summaries import encoded, snapshot


@pytest.fixture
async def redis() -> AsyncIterator[tuple[Any, str]]:
    import redis.asyncio as aioredis

    url = os.environ.get("TEST_REDIS_URL", "")
    if not url:
        pytest.fail("TEST_REDIS_URL is unset (tests/servers.py sets it)", pytrace=False)
    client = aioredis.Redis.from_url(url)
    prefix = f"qi-test-{uuid.uuid4().hex[:8]}"
    yield client, prefix
    keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


async def test_a_peer_publishing_with_a_clock_5_s_behind_reads_as_fresh(
    redis: tuple[Any, str],
) -> None:
    client, prefix = redis
    behind = time.time() - 5.0
    summary = summarize(snapshot(1.0, []), replica="b", wall_time=behind, stats=None)
    await client.set(f"{prefix}:qi:replica:b", json.dumps(summary), ex=KEY_TTL_SECONDS)
    board = ReplicaBoard("a")
    await read_peers(client, board, prefix, ["b", "gone"])
    assert [p.replica for p in board.fresh_peers(time.time())] == ["b"]
    assert board.skew("b") == pytest.approx(-5.0, abs=0.5)


async def test_rule_counts_of_a_peer_whose_clock_is_behind_are_counted(
    redis: tuple[Any, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its `at`, read on its own clock, was over STALE_SECONDS old: its hits left out."""
    client, prefix = redis
    peers = replica_rules.PEERS
    for field in ("own_id", "at", "tenants", "last_publish"):
        monkeypatch.setattr(peers, field, getattr(peers, field))
    peers.last_publish = 0.0
    counts = {"t": ["fp", {"1h": [3]}, 60.0]}
    behind = time.time() - 20.0
    record = json.dumps({"at": behind, "tenants": counts})
    await client.set(f"{prefix}:qi:rules:b", record, ex=replica_rules.KEY_TTL_SECONDS)
    board = ReplicaBoard("a")
    board.accept([encoded("b", behind)], [0.0], time.time())
    await replica_rules.exchange(client, RuleStats(), "a", ["a", "b"], prefix, skew=board.skew)
    assert [c.replica for c in replica_rules.tenant_counts("t", None, "a")] == ["b"]


def _body(board: ReplicaBoard, at: float) -> str:
    return json.dumps({"instance": board.instance, "at": at})


async def test_two_processes_publishing_under_one_replica_id_are_told_apart_and_logged(
    redis: tuple[Any, str], caplog: pytest.LogCaptureFixture
) -> None:
    """They answered as one: a listing counted 0 and listed the twin's 4 rows."""
    client, prefix = redis
    one, two = ReplicaBoard("a"), ReplicaBoard("a")
    warned = []
    for at in (1.0, 1.5, 2.0):  # each overwrites the other's summary, turn by turn
        for board in (one, two):
            await publish(client, board, prefix, _body(board, at), at)
            warned.append(board.twin_warned_at is not None)
    # Once each has seen the other's summary advance, both say so.
    assert warned == [False, False, False, True, True, True]
    assert "another process publishes as replica a" in caplog.text


async def test_a_restart_under_the_same_id_is_not_taken_for_a_twin(
    redis: tuple[Any, str], caplog: pytest.LogCaptureFixture
) -> None:
    """The killed predecessor's last summary is still there once; it never advances."""
    client, prefix = redis
    old, new = ReplicaBoard("a"), ReplicaBoard("a")
    await publish(client, old, prefix, _body(old, 1.0), 1.0)
    for at in (2.0, 2.5, 3.0):
        await publish(client, new, prefix, _body(new, at), at)
    assert new.twin_warned_at is None and "another process" not in caplog.text


# -- the registry, on Redis's clock ------------------------------------------------


async def _redis_now(client: Any) -> float:
    seconds, micros = await client.time()
    return seconds + micros / 1e6


async def _registered(client: Any, board: ReplicaBoard, prefix: str, wall: float) -> list[str]:
    """Publish as `board` with its clock reading `wall`: the registry's members."""
    return sorted(await publish(client, board, prefix, _body(board, wall), wall))


async def test_a_replica_whose_clock_is_two_minutes_behind_is_not_pruned_while_it_publishes(
    redis: tuple[Any, str],
) -> None:
    """Scored by its own clock, it was pruned by every peer's publish, while alive."""
    client, prefix = redis
    late = time.time() - 120.0
    a, b = ReplicaBoard("a"), ReplicaBoard("b")
    await _registered(client, b, prefix, late)
    assert await _registered(client, a, prefix, time.time()) == ["a", "b"]
    # Nor does it prune the peer whose clock is right.
    assert await _registered(client, b, prefix, late) == ["a", "b"]


async def test_a_replica_whose_clock_is_two_minutes_ahead_prunes_no_live_peer(
    redis: tuple[Any, str],
) -> None:
    client, prefix = redis
    a, b = ReplicaBoard("a"), ReplicaBoard("b")
    await _registered(client, b, prefix, time.time())
    assert await _registered(client, a, prefix, time.time() + 120.0) == ["a", "b"]


async def test_a_replica_is_registered_at_redis_time_and_pruned_a_minute_after_by_it(
    redis: tuple[Any, str],
) -> None:
    """One two minutes ahead stayed registered for three minutes after it stopped."""
    client, prefix = redis
    registry = f"{prefix}:qi:replicas"
    ahead = ReplicaBoard("ahead")
    await _registered(client, ahead, prefix, time.time() + 120.0)
    assert await client.zscore(registry, "ahead") == pytest.approx(
        await _redis_now(client), abs=1.0
    )
    # Gone 61 s by Redis's clock: pruned by a peer however far off its clock is.
    await client.zadd(registry, {"gone": await _redis_now(client) - 61.0})
    behind = ReplicaBoard("behind")
    assert await _registered(client, behind, prefix, time.time() - 120.0) == ["ahead", "behind"]


async def test_a_board_on_a_skewed_clock_judges_peers_by_the_ages_redis_gives(
    redis: tuple[Any, str],
) -> None:
    """The registry's stamps come back on the reader's clock: a live peer is up, a
    stopped one down, however far the reader's clock is off."""
    client, prefix = redis
    registry = f"{prefix}:qi:replicas"
    now = time.time()
    await publish(client, ReplicaBoard("b"), prefix, encoded("b", now).decode(), now)
    await client.zadd(registry, {"c": await _redis_now(client) - 30.0})  # stopped 30 s ago
    skewed = time.time() + 300.0
    a = ReplicaBoard("a")
    registered = await publish(client, a, prefix, _body(a, skewed), skewed)
    assert registered["b"] == pytest.approx(skewed, abs=1.0)
    assert registered["c"] == pytest.approx(skewed - 30.0, abs=1.0)
    await read_peers(client, a, prefix, ["b", "c"], lambda: skewed)
    a.note_registry(registered, skewed)
    assert a.replica_states(skewed) == [("a", True), ("b", True), ("c", False)]


async def test_a_peer_missing_after_redis_lost_its_data_is_reported_down_not_withdrawn(
    redis: tuple[Any, str],
) -> None:
    client, prefix = redis
    a = ReplicaBoard("a")
    now = time.time()
    await publish(client, ReplicaBoard("b"), prefix, encoded("b", now).decode(), now)
    a.note_registry(await publish(client, a, prefix, _body(a, now), now), now)
    await client.delete(*[key async for key in client.scan_iter(match=f"{prefix}*")])
    a.note_registry(await publish(client, a, prefix, _body(a, now + 1), now + 1), now + 1)
    assert a.unreachable_peers(now + 1) == ["b"]
    # A withdrawal, Redis keeping its data, is not missing.
    c = ReplicaBoard("c")
    await publish(client, c, prefix, _body(c, now + 1), now + 1)
    a.note_registry(await publish(client, a, prefix, _body(a, now + 1), now + 1), now + 1)
    await client.zrem(f"{prefix}:qi:replicas", "c")
    a.note_registry(await publish(client, a, prefix, _body(a, now + 2), now + 2), now + 2)
    assert a.unreachable_peers(now + 2) == ["b"]


async def test_a_withdrawn_replica_leaves_redis_and_is_not_missed_by_its_peer(
    redis: tuple[Any, str],
) -> None:
    """What a graceful stop does (`publish_loop` at its exit): gone, not missing."""
    client, prefix = redis
    now = time.time()
    await publish(client, ReplicaBoard("b"), prefix, encoded("b", now).decode(), now)
    a = ReplicaBoard("a")
    a.note_registry(await publish(client, a, prefix, _body(a, now), now), now)
    assert a.replica_states(now) == [("a", True), ("b", False)]  # known, its summary unread

    await withdraw(client, prefix, "b", 1.0)

    assert await client.get(f"{prefix}:qi:replica:b") is None
    registered = await publish(client, a, prefix, _body(a, now + 1), now + 1)
    assert list(registered) == ["a"]
    a.note_registry(registered, now + 1)
    assert a.replica_states(now + 1) == [("a", True)]
    assert a.unreachable_peers(now + 1) == []
