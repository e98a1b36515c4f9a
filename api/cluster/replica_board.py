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
from collections.abc import Iterable
from typing import Any

from api.cluster.replicas import (
    MalformedSummary,
    MergedView,
    PeerSummary,
    local_stats,
    merge,
    replica_id,
    summarize,
)
from scheduler_core.snapshot import QueueSnapshot

__all__ = ["PUBLISH_SECONDS", "STALE_SECONDS", "ReplicaBoard", "get_board", "publish_loop"]

log = logging.getLogger(__name__)

PUBLISH_SECONDS = 0.5
# A summary older than this is ignored even if its key has not expired yet:
# its replica has stopped publishing (hung or gone), and old numbers mislead.
STALE_SECONDS = 3.0
KEY_TTL_SECONDS = 5


class ReplicaBoard:
    """Peers' latest summaries in this process; read by views without any I/O."""

    def __init__(self, own_id: str | None = None) -> None:
        self.own_id = own_id or replica_id()
        self.peers: tuple[PeerSummary, ...] = ()

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
    stats = local_stats(host.stats, frontends=len(frontends))
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
        pipe.zrange(registry, 0, -1)
        *_, members = await pipe.execute()
    others = [m.decode() for m in members if m.decode() != board.own_id]
    values = await client.mget([_keys(prefix, m)[0] for m in others]) if others else []
    board.accept(values)


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
