"""The peers' summaries in this process, and the Redis loop that keeps them fresh.

Every `PUBLISH_SECONDS` the loop writes this replica's summary
(`api.cluster.replicas.summarize`: queue, queriers, stats and top frontends) to
`<prefix>:qi:replica:<id>` with a short TTL, registers the ID in the sorted
set `<prefix>:qi:replicas` (so readers never SCAN the keyspace), and reads
every peer's summary back in the same pass into the board. Views merge the
board with the live local snapshot and do no I/O of their own, so a page
costs no Redis round trip, and peers' data is at most about two publish
periods old. When Redis fails the board empties: no
numbers beat stale numbers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from api.cluster import replica_rules
from api.cluster.replica_stats import host_stats
from api.cluster.replicas import (
    MalformedSummary,
    MergedView,
    PeerSummary,
    merge,
    replica_id,
    summarize,
)
from scheduler_core.snapshot import QueueSnapshot

__all__ = [
    "MISSING_MEMORY_SECONDS",
    "PUBLISH_SECONDS",
    "STALE_SECONDS",
    "ReplicaBoard",
    "get_board",
    "publish_loop",
]

log = logging.getLogger(__name__)

PUBLISH_SECONDS = 0.5
# A summary older than this is ignored even if its key has not expired yet:
# its replica has stopped publishing (hung or gone), and old numbers mislead.
STALE_SECONDS = 3.0
KEY_TTL_SECONDS = 5


# A replica that stopped publishing without withdrawing (crashed, hung, or
# scaled away without a graceful stop) is reported missing for this long
# after its last summary; the registry itself forgets it after a minute.
MISSING_MEMORY_SECONDS = 900.0
# The registry prunes members a minute after their last publish; one that
# left it sooner withdrew itself (graceful shutdown) and is not missing.
_PRUNE_AFTER = 60.0


class ReplicaBoard:
    """Peers' latest summaries in this process; read by views without any I/O.

    `last_seen` (replica -> wall time of its last publish, from the registry's
    scores) outlives the registry entry, so `replica_states` can report a
    replica that vanished without a graceful withdrawal as missing (the
    `queue_inspector_replica_up` gauge) for `MISSING_MEMORY_SECONDS`.
    """

    def __init__(self, own_id: str | None = None) -> None:
        self.own_id = own_id or replica_id()
        self.peers: tuple[PeerSummary, ...] = ()
        self.last_seen: dict[str, float] = {}
        # Wall time of the last successful registry read; peers are only
        # judged while it is fresh (Redis down: we know nothing of them).
        self.registry_at: float | None = None

    def note_registry(self, members: Mapping[str, float], wall_now: float) -> None:
        """Remember each registered peer's last publish; forget withdrawn ones."""
        seen = self.last_seen
        for replica, at in members.items():
            if replica != self.own_id and at > seen.get(replica, 0.0):
                seen[replica] = at
        for replica in list(seen):
            if replica in members:
                continue
            age = wall_now - seen[replica]
            # Gone from the registry before the prune age: it withdrew itself.
            if age < _PRUNE_AFTER - 2 * PUBLISH_SECONDS or age > MISSING_MEMORY_SECONDS:
                del seen[replica]
        self.registry_at = wall_now

    def replica_states(self, wall_now: float | None = None) -> list[tuple[str, bool]]:
        """(replica, up) for this replica and every peer it knows, sorted by name.

        Up means a summary fresher than `STALE_SECONDS`; a peer that
        published within `MISSING_MEMORY_SECONDS` and did not withdraw is down.
        """
        wall_now = time.time() if wall_now is None else wall_now
        states = {self.own_id: True}
        if self.registry_at is not None and wall_now - self.registry_at <= STALE_SECONDS:
            fresh = {p.replica for p in self.fresh_peers(wall_now)}
            for replica in self.last_seen:
                states[replica] = replica in fresh
            for replica in fresh:
                states[replica] = True
        return sorted(states.items())

    def fresh_peers(self, wall_now: float) -> tuple[PeerSummary, ...]:
        return tuple(p for p in self.peers if wall_now - p.at <= STALE_SECONDS)

    def view(self, local: QueueSnapshot, wall_now: float | None = None) -> MergedView | None:
        """The merged view, or None when no peer is live (single-replica mode)."""
        wall_now = time.time() if wall_now is None else wall_now
        peers = self.fresh_peers(wall_now)
        if not peers:
            return None
        return merge(local, self.own_id, peers, wall_now)

    def accept(self, raws: Iterable[bytes | None]) -> None:
        """Replace the peers with the summaries just read; bad ones are skipped."""
        peers: list[PeerSummary] = []
        for raw in raws:
            if raw is None:
                continue
            try:
                peer = PeerSummary.parse(json.loads(raw))
            except (ValueError, MalformedSummary) as exc:
                log.warning("ignoring a replica summary: %s", exc)
                continue
            if peer.replica != self.own_id:
                peers.append(peer)
        self.peers = tuple(sorted(peers, key=lambda p: p.replica))


_board: ReplicaBoard | None = None


def get_board() -> ReplicaBoard:
    global _board
    if _board is None:
        _board = ReplicaBoard()
    return _board


def _keys(prefix: str, replica: str) -> tuple[str, str]:
    base = f"{prefix}:qi:replica"
    return f"{base}:{replica}", f"{base}s"


async def _exchange(client: Any, host: Any, board: ReplicaBoard, prefix: str) -> None:
    """Publish our summary, then read every registered peer's (two round trips)."""
    wall = time.time()
    frontends = host.frontends()
    stats = host_stats(host, frontends)
    summary = summarize(
        host.runtime.snapshot(),
        replica=board.own_id,
        wall_time=wall,
        stats=stats,
        frontends=frontends,
    )
    body = json.dumps(summary, separators=(",", ":"))
    key, registry = _keys(prefix, board.own_id)
    async with client.pipeline(transaction=False) as pipe:
        pipe.set(key, body, ex=KEY_TTL_SECONDS)
        pipe.zadd(registry, {board.own_id: wall})
        # Registry entries of replicas gone for a minute are pruned; the TTL
        # on their keys already hides them from readers.
        pipe.zremrangebyscore(registry, "-inf", wall - 60)
        pipe.zrange(registry, 0, -1, withscores=True)
        *_, members = await pipe.execute()
    registered = {m.decode(): float(at) for m, at in members}
    others = [m for m in registered if m != board.own_id]
    values = await client.mget([_keys(prefix, m)[0] for m in others]) if others else []
    board.accept(values)
    board.note_registry(registered, wall)
    # Rule hit counts ride the same loop, at their own slower cadence.
    log_ = getattr(host, "admission_log", None)
    if log_ is not None:
        await replica_rules.exchange(client, log_.stats, board.own_id, list(registered), prefix)


async def publish_loop(host: Any, redis_url: str, prefix: str) -> None:
    """Run on the runtime's loop for the life of the host; withdraws our key at exit."""
    import redis.asyncio as aioredis

    board = get_board()
    client = aioredis.Redis.from_url(redis_url)
    failing = False
    try:
        while True:
            try:
                await _exchange(client, host, board, prefix)
                failing = False
            except (OSError, aioredis.RedisError) as exc:
                board.peers = ()  # no numbers beat stale numbers
                replica_rules.forget_peers()
                if not failing:
                    log.warning("replica summaries unavailable (%s): this replica only", exc)
                failing = True
            await asyncio.sleep(PUBLISH_SECONDS)
    finally:
        key, registry = _keys(prefix, board.own_id)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.delete(key), 1.0)
            await asyncio.wait_for(client.zrem(registry, board.own_id), 1.0)
        with contextlib.suppress(Exception):
            await client.aclose()
