"""The peers' summaries in this process, and the Redis loop that keeps them fresh.

Every `PUBLISH_SECONDS` the loop writes this replica's summary
(`api.cluster.replicas.summarize`: queue, queriers, stats and top frontends)
to Redis and reads every registered peer's back in the same pass
(`api.cluster.replica_registry`: the keys, the registry and its script)
into the board. Views merge the board with the live local snapshot and do
no I/O of their own, so a page costs no Redis round trip, and peers' data
is at most about two publish periods old. When Redis fails the board
empties: no numbers beat stale numbers.

Here: `ReplicaBoard` (which peers are up, down or missing, their merged
view, a twin publishing under our ID, each peer's clock offset), the
process's one board (`get_board`), and the loop (`publish_loop`).

How old a summary is comes from Redis's clock (its key's remaining TTL),
not from the publisher's: a replica whose clock was 5 s behind was
reported down by every peer, its requests never listed nor cancelled.
Each peer's clock offset is kept (`skew`) and logged when over a second.

May import: `api.cluster`, `scheduler_core`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from api.cluster import replica_rules
from api.cluster.lost_cancels import raise_if_cancelled
from api.cluster.replica_registry import (
    KEY_TTL_SECONDS,
    PRUNE_AFTER_SECONDS,
    publish,
    read_peers,
    withdraw,
)
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
    "KEY_TTL_SECONDS",
    "MISSING_MEMORY_SECONDS",
    "PUBLISH_SECONDS",
    "STALE_SECONDS",
    "ReplicaBoard",
    "get_board",
    "publish",
    "publish_loop",
    "read_peers",
]

log = logging.getLogger(__name__)

PUBLISH_SECONDS = 0.5
# A summary older than this is ignored even if its key has not expired yet:
# its replica has stopped publishing (hung or gone), and old numbers mislead.
STALE_SECONDS = 3.0
# A peer clock further off than this is logged (once, until it is back in step).
SKEW_WARN_SECONDS = 1.0
# A peer's clock offset is the largest of its last this many readings. Each
# reading errs one way only (a write Redis ran late, a reply read late make
# the peer look behind), and a hung Redis running a write queued 18 s before
# read as a clock 18 s behind: logged, and that old summary taken as fresh.
SKEW_SAMPLES = 8


# A replica that stopped publishing without withdrawing (crashed, hung, or
# scaled away without a graceful stop) is reported missing for this long
# after its last summary; the registry itself forgets it after a minute.
MISSING_MEMORY_SECONDS = 900.0


class ReplicaBoard:
    """Peers' latest summaries in this process; read by views without any I/O.

    `last_seen` (replica -> its last publish on this replica's wall clock,
    from the age Redis's clock gives its registry score) outlives the
    registry entry, so `replica_states` can report a replica that vanished
    without a graceful withdrawal as missing (the `queue_inspector_replica_up`
    gauge) for `MISSING_MEMORY_SECONDS`.
    """

    def __init__(self, own_id: str | None = None) -> None:
        self.own_id = own_id or replica_id()
        self.peers: tuple[PeerSummary, ...] = ()
        self.last_seen: dict[str, float] = {}
        # Wall time of the last successful registry read; peers are only
        # judged while it is fresh (Redis down: we know nothing of them).
        self.registry_at: float | None = None
        # Whether Redis failed since the last registry read, and when peers
        # are judged again after that (`note_registry`).
        self._outage = False
        self._judged_from = 0.0
        # Each peer's latest readings of its clock minus ours, measured
        # through its key's TTL; its skew is the largest (`skew`).
        self._skew_samples: dict[str, deque[float]] = {}
        self._skew_warned: set[str] = set()
        # This process, in its summary: another one publishing under our ID
        # (REPLICA_ID set alike on several) shows as a foreign instance.
        self.instance = uuid.uuid4().hex
        self._foreign: tuple[str, float] | None = None
        self.twin_warned_at: float | None = None
        # Redis's data epoch (`note_epoch`), and the peers it forgot when it
        # lost its data: those did not withdraw.
        self._epoch: str | None = None
        self._lost: set[str] = set()

    def note_epoch(self, epoch: str, members: Iterable[str]) -> None:
        """Redis's data epoch, read with the registry: a new one means Redis lost its data.

        A known peer then absent from the registry did not withdraw (Redis
        forgot it with everything else): it stays known, down like a
        crashed one, until it registers again. A replica killed around a
        Redis restart was taken for one that withdrew: never named missing,
        its requests silently absent from every listing.
        """
        if self._epoch is not None and epoch != self._epoch:
            self._lost.update(r for r in self.last_seen if r not in members)
        self._epoch = epoch

    def note_registry(self, members: Mapping[str, float], wall_now: float) -> None:
        """Remember each registered peer's last publish; forget withdrawn ones.

        The first read after Redis failed (`lost_redis`) judges no peer for
        `STALE_SECONDS`, the time a live one has to publish again: each
        outage's end reported every peer not yet back as down.
        """
        if self._outage:
            self._judged_from = wall_now + STALE_SECONDS
            self._outage = False
        seen = self.last_seen
        for replica, at in members.items():
            if replica != self.own_id and at > seen.get(replica, 0.0):
                seen[replica] = at
            self._lost.discard(replica)
        for replica in list(seen):
            if replica in members:
                continue
            age = wall_now - seen[replica]
            # Gone from the registry before the prune age: it withdrew itself.
            withdrew = age < PRUNE_AFTER_SECONDS - 2 * PUBLISH_SECONDS and replica not in self._lost
            if withdrew or age > MISSING_MEMORY_SECONDS:
                del seen[replica]
                self._lost.discard(replica)
        # A peer forgotten here takes its clock readings along: each restart
        # of a peer is a new ID (host and PID), and they piled up for good.
        for replica in [r for r in self._skew_samples if r not in seen and r not in members]:
            del self._skew_samples[replica]
            self._skew_warned.discard(replica)
        self.registry_at = wall_now

    def lost_redis(self) -> None:
        """Redis failed: no numbers beat stale numbers, and no registry to judge peers by.

        Judged by the registry read just before, every peer was reported
        down (the up gauge at 0) for `STALE_SECONDS` of each Redis outage.
        """
        self.peers = ()
        self.registry_at = None
        self._outage = True

    def replica_states(self, wall_now: float | None = None) -> list[tuple[str, bool]]:
        """(replica, up) for this replica and every peer it knows, sorted by name.

        Up means a summary fresher than `STALE_SECONDS`; a peer that
        published within `MISSING_MEMORY_SECONDS` and did not withdraw is down
        (not yet while it has time to publish after an outage: `note_registry`).
        """
        wall_now = time.time() if wall_now is None else wall_now
        states = {self.own_id: True}
        if self._registry_read(wall_now):
            judging = wall_now >= self._judged_from
            fresh = {p.replica for p in self.fresh_peers(wall_now)}
            for replica in self.last_seen.copy():  # a scrape's thread: see `unreachable_peers`
                if judging or replica in fresh:
                    states[replica] = replica in fresh
            for replica in fresh:
                states[replica] = True
        return sorted(states.items())

    def unreachable_peers(self, wall_now: float | None = None) -> list[str]:
        """Peers whose queue this replica cannot see now, sorted.

        Every peer known within `MISSING_MEMORY_SECONDS` that did not
        withdraw and has no fresh summary: the down ones of `replica_states`
        and, while the registry cannot be read (Redis unreachable) or peers
        are not judged yet after that, the others too. Their requests are
        absent from this replica's answers, which must name them rather
        than pass for a lone replica's. (`replica_states`, behind the up
        gauge, judges no peer then, so a Redis outage does not page as
        replicas down.)
        """
        wall_now = time.time() if wall_now is None else wall_now
        fresh = {p.replica for p in self.fresh_peers(wall_now)}
        # A copy (one step under the GIL): views call this from their worker
        # threads while `note_registry`, on the loop's, adds and drops peers;
        # iterating the dict itself raised "dictionary changed size" (a 500).
        seen = self.last_seen.copy()
        return sorted(
            replica
            for replica, at in seen.items()
            if wall_now - at <= MISSING_MEMORY_SECONDS and replica not in fresh
        )

    def _registry_read(self, wall_now: float) -> bool:
        """Whether the registry was read lately enough to judge peers by it."""
        return self.registry_at is not None and wall_now - self.registry_at <= STALE_SECONDS

    def known_peers(self, wall_now: float | None = None) -> list[str]:
        """Every peer this replica knows of, sorted: publishing a fresh summary,
        or gone without withdrawing (`unreachable_peers`). One that withdrew
        (a graceful stop) is not: its queue and its traffic left with it."""
        wall_now = time.time() if wall_now is None else wall_now
        fresh = {p.replica for p in self.fresh_peers(wall_now)}
        return sorted(fresh.union(self.unreachable_peers(wall_now)))

    def fresh_peers(self, wall_now: float) -> tuple[PeerSummary, ...]:
        return tuple(p for p in self.peers if wall_now - p.at <= STALE_SECONDS)

    def view(self, local: QueueSnapshot, wall_now: float | None = None) -> MergedView | None:
        """The merged view, or None for a lone replica (no peer live or unreachable).

        A view whose peers are all unreachable is still one: its answers
        are this replica's alone and must name the others as missing.
        """
        wall_now = time.time() if wall_now is None else wall_now
        peers = self.fresh_peers(wall_now)
        missing = tuple(self.unreachable_peers(wall_now))
        if not peers and not missing:
            return None
        return replace(merge(local, self.own_id, peers, wall_now), missing=missing)

    def accept(
        self,
        raws: Iterable[bytes | None],
        ages: Sequence[float | None] = (),
        wall_now: float | None = None,
    ) -> None:
        """Replace the peers with the summaries just read; bad ones are skipped.

        `ages[i]`, when known, is how long ago `raws[i]` was published by
        Redis's clock (its key's TTL): the summary's `at` is then moved onto
        this replica's clock, so a peer whose clock is behind is neither
        stale forever (reported down, its requests never listed) nor, ahead,
        fresh after it stopped. How far its clock is off is kept (`skew`),
        and moves `at`: a summary Redis wrote late is as old as its numbers.
        """
        wall_now = time.time() if wall_now is None else wall_now
        peers: list[PeerSummary] = []
        for i, raw in enumerate(raws):
            if raw is None:
                continue
            try:
                peer = PeerSummary.parse(json.loads(raw))
            except (ValueError, MalformedSummary) as exc:
                log.warning("ignoring a replica summary: %s", exc)
                continue
            if peer.replica == self.own_id:
                continue
            age = ages[i] if i < len(ages) else None
            if age is not None:
                self._note_skew(peer.replica, peer.at - (wall_now - age))
                peer = replace(peer, at=peer.at - self.skew(peer.replica))
            peers.append(peer)
        self.peers = tuple(sorted(peers, key=lambda p: p.replica))

    def note_own_key(self, raw: bytes | None, wall_now: float) -> bool:
        """Check what our key held before we wrote it: another live process's summary?

        Two replicas with one REPLICA_ID overwrite each other's summary and
        answer each other's questions as one: the merged queue shows either
        one's, a listing counted one and listed the other's rows, a cancel
        of a listed request was a 404. A foreign instance seen publishing
        again (a newer summary, not a dead predecessor's last one) is
        logged as an error, at most once a minute.
        """
        try:
            found = json.loads(raw) if raw is not None else None
        except ValueError:
            found = None
        if not isinstance(found, dict) or found.get("instance") in (None, self.instance):
            return False
        instance, at = str(found["instance"]), found.get("at")
        if not isinstance(at, (int, float)):
            return False
        previous, self._foreign = self._foreign, (instance, float(at))
        if previous is None or previous[0] != instance or previous[1] >= at:
            return False
        if self.twin_warned_at is None or wall_now - self.twin_warned_at >= 60:
            log.error(
                "another process publishes as replica %s: give each replica its own "
                "REPLICA_ID, or their queues show as one and listings and cancels "
                "across replicas go wrong",
                self.own_id,
            )
            self.twin_warned_at = wall_now
        return True

    def skew(self, replica: str) -> float:
        """How far `replica`'s clock is ahead of this one's (seconds; 0 if unknown)."""
        samples = self._skew_samples.get(replica)
        return max(samples) if samples else 0.0

    def _note_skew(self, replica: str, reading: float) -> None:
        samples = self._skew_samples.setdefault(replica, deque(maxlen=SKEW_SAMPLES))
        samples.append(reading)
        skew = max(samples)
        warned = replica in self._skew_warned
        if abs(skew) > SKEW_WARN_SECONDS and not warned:
            side = "ahead of" if skew > 0 else "behind"
            log.warning(
                "replica %s's clock is %.1f s %s this one's: keep the replicas' clocks "
                "in step (NTP); summaries are corrected for it, cancels' deadlines too",
                replica,
                abs(skew),
                side,
            )
            self._skew_warned.add(replica)
        elif abs(skew) <= SKEW_WARN_SECONDS / 2 and warned:
            self._skew_warned.discard(replica)


_board: ReplicaBoard | None = None


def get_board() -> ReplicaBoard:
    global _board
    if _board is None:
        _board = ReplicaBoard()
    return _board


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
    summary["instance"] = board.instance
    body = json.dumps(summary, separators=(",", ":"))
    registered = await publish(client, board, prefix, body, wall)
    await read_peers(client, board, prefix, [m for m in registered if m != board.own_id])
    # Now, not `wall`: a round trip a hung Redis held for seconds ended the
    # peers' window to publish again (`note_registry`) before it began.
    board.note_registry(registered, time.time())
    # Rule hit counts ride the same loop, at their own slower cadence.
    log_ = getattr(host, "admission_log", None)
    if log_ is not None:
        peers = list(registered)
        await replica_rules.exchange(
            client, log_.stats, board.own_id, peers, prefix, skew=board.skew
        )


async def publish_loop(host: Any, redis_url: str, prefix: str) -> None:
    """Run on the runtime's loop for the life of the host; withdraws our key at exit."""
    import redis.asyncio as aioredis

    board = get_board()
    client = aioredis.Redis.from_url(redis_url)
    failing = False
    try:
        while True:
            raise_if_cancelled()
            try:
                await _exchange(client, host, board, prefix)
                failing = False
            except (OSError, aioredis.RedisError) as exc:
                raise_if_cancelled()
                board.lost_redis()
                replica_rules.forget_peers()
                if not failing:
                    log.warning("replica summaries unavailable (%s): this replica only", exc)
                failing = True
            await asyncio.sleep(PUBLISH_SECONDS)
    finally:
        with contextlib.suppress(Exception):
            await withdraw(client, prefix, board.own_id, 1.0)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.aclose(), 1.0)
