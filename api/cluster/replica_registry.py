"""The replica summaries' layout in Redis, and the round trips that write and read them.

Each replica's summary is `<prefix>:qi:replica:<id>`, set with a
`KEY_TTL_SECONDS` TTL, and its ID is registered in the sorted set
`<prefix>:qi:replicas` (so readers never SCAN the keyspace). `publish`
writes both in one round trip; `read_peers` reads every peer's summary and
its key's remaining TTL in another; `withdraw` removes ours at a graceful
stop. What they read goes into a `api.cluster.replica_board.ReplicaBoard`.

The registry is scored and pruned on Redis's clock (`TIME`, in one script),
and its scores are read back as ages: a replica a minute behind was pruned
by every peer's publish while alive, and one a minute ahead pruned its
peers (or, stopped, stayed registered for minutes). The same script keeps
Redis's data epoch, set once: a new one means Redis lost its data
(`ReplicaBoard.note_epoch`).

May import: nothing of the project but the board's type.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from api.cluster.replica_board import ReplicaBoard

__all__ = ["KEY_TTL_SECONDS", "PRUNE_AFTER_SECONDS", "publish", "read_peers", "withdraw"]

KEY_TTL_SECONDS = 5
# The registry prunes members a minute after their last publish; one that
# left it sooner withdrew itself (graceful shutdown) and is not missing.
PRUNE_AFTER_SECONDS = 60.0

# Registers ARGV[1] in the registry KEYS[1] and prunes members older than
# ARGV[2] seconds, both by Redis's clock, so no replica's own clock is
# compared with another's stamp. Returns Redis's time, the registry and the
# data epoch KEYS[2]: set once, so a new one means Redis lost its data.
# (`replicate_commands` lets Redis < 5 write after TIME; later ones ignore it.)
_REGISTER = """
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = string.format('%d.%06d', t[1], t[2])
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', tonumber(now) - tonumber(ARGV[2]))
redis.call('SET', KEYS[2], now, 'NX')
return {now, redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES'), redis.call('GET', KEYS[2])}
"""


def _keys(prefix: str, replica: str) -> tuple[str, str]:
    base = f"{prefix}:qi:replica"
    return f"{base}:{replica}", f"{base}s"


async def publish(
    client: Any, board: ReplicaBoard, prefix: str, body: str, wall: float
) -> dict[str, float]:
    """Write our summary and registry entry; the registry as it now is.

    Each member maps to its last publish as a time on our clock (`wall`,
    now): how long ago Redis registered it, by Redis's clock, before `wall`.
    What our key held before is read in the same round trip, to catch
    another process publishing under our ID (`ReplicaBoard.note_own_key`).
    """
    key, registry = _keys(prefix, board.own_id)
    async with client.pipeline(transaction=False) as pipe:
        pipe.get(key)
        pipe.set(key, body, ex=KEY_TTL_SECONDS)
        # Registry entries of replicas gone for a minute are pruned; the TTL
        # on their keys already hides them from readers.
        pipe.eval(_REGISTER, 2, registry, f"{registry}:epoch", board.own_id, PRUNE_AFTER_SECONDS)
        before, _, (redis_now, flat, epoch) = await pipe.execute()
    board.note_own_key(before, wall)
    now = float(redis_now)
    members = {
        flat[i].decode(): wall - max(0.0, now - float(flat[i + 1])) for i in range(0, len(flat), 2)
    }
    board.note_epoch(epoch.decode(), members)
    return members


async def read_peers(
    client: Any,
    board: ReplicaBoard,
    prefix: str,
    peers: list[str],
    clock: Callable[[], float] = time.time,
) -> None:
    """Every peer's summary and how long ago Redis got it (one round trip) into the board."""
    replies: list[Any] = []
    if peers:
        async with client.pipeline(transaction=False) as pipe:
            for replica in peers:
                key = _keys(prefix, replica)[0]
                pipe.get(key)
                pipe.pttl(key)
            replies = await pipe.execute()
    raws, ttls = replies[0::2], replies[1::2]
    # A key set with `ex=KEY_TTL_SECONDS` has lived what its TTL lost since.
    ages = [KEY_TTL_SECONDS - ms / 1000 if ms >= 0 else None for ms in ttls]
    board.accept(raws, ages, clock())


async def withdraw(client: Any, prefix: str, replica: str, timeout: float) -> None:
    """Remove `replica`'s summary, then its registry entry (each within `timeout` seconds).

    Gone from the registry before `PRUNE_AFTER_SECONDS`, it is taken by its
    peers for one that stopped on purpose, not one that went missing.
    """
    key, registry = _keys(prefix, replica)
    await asyncio.wait_for(client.delete(key), timeout)
    await asyncio.wait_for(client.zrem(registry, replica), timeout)
