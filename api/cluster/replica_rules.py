"""Rule hit counts of every replica, through Redis, for `tenants/<id>/rule-stats/`.

Every `PUBLISH_EVERY` seconds the replica-summary loop also writes this
replica's counts (`<prefix>:qi:rules:<replica>`, short TTL): per tenant
it counts, the fingerprint of the limits it counted under and its counts by
window and slot (only "since the version" for a tenant quiet for an hour,
whose other windows are zeros). It reads the peers' back into
`PEERS` in the same pass, so the REST view merges without any I/O. Counts
are a few seconds old at most; a replica that stopped publishing drops out
after `STALE_SECONDS`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = [
    "PUBLISH_EVERY",
    "STALE_SECONDS",
    "PeerCounts",
    "ReplicaCounts",
    "encode_counts",
    "exchange",
    "peer_counts",
    "tenant_counts",
]

log = logging.getLogger(__name__)

PUBLISH_EVERY = 5.0
STALE_SECONDS = 3 * PUBLISH_EVERY
KEY_TTL_SECONDS = int(STALE_SECONDS)


@dataclass(frozen=True, slots=True)
class ReplicaCounts:
    """One replica's counts of one tenant: by window, a list by slot.

    `age` is how long (seconds) that replica has counted under this config
    (None from a replica that does not say): the span its windows cover.
    """

    replica: str
    fingerprint: str
    windows: dict[str, list[int]]
    age: float | None = None


@dataclass(slots=True)
class _Peers:
    own_id: str = ""
    at: dict[str, float] | None = None
    tenants: dict[str, dict[str, Any]] | None = None
    last_publish: float = 0.0


PEERS = _Peers()


class PeerCounts(NamedTuple):
    """One read of `PEERS`, taken whole for one answer.

    An answer's sums and its scope (who is counted, who is missing) must
    come from the same read: read apart, an exchange landing between them
    (it runs on the loop while a view works in its thread) gave sums of
    this replica alone under a scope saying every peer was counted.
    """

    at: dict[str, float] | None
    tenants: dict[str, dict[str, Any]] | None


def peer_counts() -> PeerCounts:
    """The peers' counts as last read (both None while unread or Redis failed)."""
    return PeerCounts(PEERS.at, PEERS.tenants)


def encode_counts(stats: Any) -> dict[str, list[Any]]:
    """tenant -> [fingerprint, windows, age] for every tenant with a count.

    A tenant quiet for an hour still has its "since the version" counts:
    left out, as they were, they fell out of every peer's sums an hour
    after its last request, with no replica named missing. Its 5 m and 1 h
    windows are all zeros, so only "version" goes (a reader takes a missing
    window as zeros). The tenants are bounded: the metrics janitor forgets
    an idle tenant nobody configured.
    """
    out: dict[str, list[Any]] = {}
    for tenant_id in stats.tenants():
        counts = stats.counts(tenant_id)
        if counts is None or not counts.windows["version"][0]:
            continue
        windows = (
            counts.windows if counts.windows["1h"][0] else {"version": counts.windows["version"]}
        )
        out[tenant_id] = [counts.fingerprint, windows, round(counts.age, 1)]
    return out


def _key(prefix: str, replica: str) -> str:
    return f"{prefix}:qi:rules:{replica}"


async def exchange(
    client: Any,
    stats: Any,
    own_id: str,
    replicas: list[str],
    prefix: str,
    skew: Callable[[str], float] = lambda _replica: 0.0,
) -> None:
    """Publish ours and read the peers' (`replicas`: every registered id).

    `skew(replica)` is how far that replica's clock is ahead of ours (the
    board measures it): its `at` is moved onto our clock, or a peer whose
    clock ran `STALE_SECONDS` behind had its counts left out for good.
    """
    wall = time.time()
    if wall - PEERS.last_publish < PUBLISH_EVERY:
        return
    PEERS.last_publish = wall
    body = json.dumps({"at": wall, "tenants": encode_counts(stats)}, separators=(",", ":"))
    others = [r for r in replicas if r != own_id]
    await client.set(_key(prefix, own_id), body, ex=KEY_TTL_SECONDS)
    raws = await client.mget([_key(prefix, r) for r in others]) if others else []
    at: dict[str, float] = {}
    tenants: dict[str, dict[str, Any]] = {}
    for replica, raw in zip(others, raws, strict=True):
        if raw is None:
            continue
        try:
            parsed = json.loads(raw)
            at[replica] = float(parsed["at"]) - skew(replica)
            tenants[replica] = dict(parsed["tenants"])
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("ignoring replica %s's rule counts: %s", replica, exc)
    PEERS.own_id, PEERS.at, PEERS.tenants = own_id, at, tenants


def forget_peers() -> None:
    """Redis failed: no numbers beat stale numbers."""
    PEERS.at, PEERS.tenants = None, None


def _windows(raw: Any) -> dict[str, list[int]]:
    if not isinstance(raw, dict):
        return {}
    return {
        str(name): [int(c) for c in counts]
        for name, counts in raw.items()
        if isinstance(counts, list)
    }


def _age(raw: Any) -> float | None:
    # bool is an int to Python, and NaN or a negative age is no span at all.
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return None
    return float(raw) if 0 <= raw < float("inf") else None


def tenant_counts(
    tenant_id: str,
    local: Any,
    own_id: str | None = None,
    wall_now: float | None = None,
    peers: PeerCounts | None = None,
) -> list[ReplicaCounts]:
    """This replica's counts (`local`, a RuleCounts or None) and fresh peers'
    (of `peers`, by default the last read)."""
    from api.cluster.replicas import replica_id

    own = own_id or PEERS.own_id or replica_id()
    found: list[ReplicaCounts] = []
    if local is not None:
        found.append(ReplicaCounts(own, local.fingerprint, local.windows, local.age))
    now = time.time() if wall_now is None else wall_now
    at, read = peers if peers is not None else peer_counts()
    for replica, tenants in sorted((read or {}).items()):
        if now - (at or {}).get(replica, 0.0) > STALE_SECONDS:
            continue
        entry = tenants.get(tenant_id)
        # A replica of an earlier release sends no age: [fingerprint, windows].
        if isinstance(entry, list) and len(entry) in (2, 3):
            age = _age(entry[2]) if len(entry) == 3 else None
            found.append(ReplicaCounts(replica, str(entry[0]), _windows(entry[1]), age))
    return found
