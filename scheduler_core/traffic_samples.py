"""The recorder's sampled requests: per key and 5-minute epoch, a reservoir and actor counts.

Per (tenant, component, priority) key and epoch, `EpochSampler` keeps a
uniform sample (reservoir, seeded) of `samples_per_epoch` requests'
classification inputs (query, API type, time range, step, the headers the
rules read and the wall time it came), so a proposed rule re-prioritises
them with the real classifier and each part of the window replays the
queries of its own epoch.

A request that named an actor keeps the path it was *sent* with
(`Request.sent_actor_path`, every level, not the levels the live queue
placed it by), as the header it came in (`actor_path_header()`, the one
admission read it from) with the path `|`-joined: the replay reads the path
from the headers as admission does under each simulated config, so a
proposal of another header name or of more levels places it as the doors
and the queue would. The path is bounded as at admission (`actor_value`).

The samples give an actor mix too coarsely (16 of a 60/40 mix come out
anywhere from 40/60 to 80/20), so each epoch also counts its arrivals by
actor path exactly (`max_actors_per_epoch` paths; arrivals of further
actors are counted as `other` by whoever reads `seen`).

The sampled text, and the actor counts' (`_TALLY_OVERHEAD` each plus the
path), are held to `max_bytes` in all, as the dry run's sample is: past it
an epoch's reservoir keeps its first request, so every key still replays,
and takes others only in place of one as large or larger.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from scheduler_core.model import Request
from scheduler_core.recording import actor_value
from scheduler_core.traffic import ENTRY_OVERHEAD, rule_headers

__all__ = ["Epoch", "EpochSampler"]

# What one actor's count costs besides its text (a dict entry and an int).
_TALLY_OVERHEAD = 100


@dataclass(slots=True)
class Epoch:
    """One key's epoch: requests seen, the reservoir, its sizes, arrivals by actor ("" none)."""

    index: int
    seen: int = 0
    samples: list[dict[str, Any]] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    actors: dict[str, int] = field(default_factory=dict)
    actor_bytes: int = 0

    def held(self) -> int:
        """The bytes of the budget this epoch holds: its samples and its actor counts."""
        return sum(self.sizes) + self.actor_bytes


class EpochSampler:
    """Samples requests into their key's epochs, within one byte budget (see module doc)."""

    def __init__(
        self,
        *,
        samples_per_epoch: int,
        max_actors_per_epoch: int,
        max_bytes: int,
        epoch_seconds: int,
        epochs_kept: int,
        seed: int,
        actor_path_header: Callable[[], str],
        wall_clock: Callable[[], float],
    ) -> None:
        self.samples_per_epoch = samples_per_epoch
        self.max_actors_per_epoch = max_actors_per_epoch
        self.max_bytes = max_bytes
        self.epoch_seconds = epoch_seconds
        self.used = 0  # the budget held, as `ENTRY_OVERHEAD` + text a sample
        self._epochs_kept = epochs_kept
        self._rng = random.Random(seed)
        # The header admission reads actor paths from now (the live setting).
        self._actor_header = actor_path_header
        self._wall = wall_clock

    def add(self, epochs: deque[Epoch], request: Request, now: float) -> None:
        """Count the request in its epoch (by actor) and reservoir-sample it."""
        index = int(now // self.epoch_seconds)
        if not epochs or epochs[-1].index != index:
            if len(epochs) >= self._epochs_kept:
                self.used -= epochs.popleft().held()
            epochs.append(Epoch(index))
        current = epochs[-1]
        current.seen += 1
        actor = actor_value(request.sent_actor_path)
        self._tally(current, actor)
        samples, sizes = current.samples, current.sizes
        if len(samples) < self.samples_per_epoch:
            slot = len(samples)
        else:
            slot = self._rng.randrange(current.seen)
            if slot >= self.samples_per_epoch:
                return
        kept = self._kept_headers(request, actor)
        size = ENTRY_OVERHEAD + len(request.query) + sum(map(len, kept.values()))
        old = sizes[slot] if slot < len(sizes) else 0
        # Past the budget only what replaces as much text may come in; an
        # empty reservoir takes its first, or the key's arrivals had no query.
        if samples and self.used + size - old > self.max_bytes:
            return
        if slot == len(samples):
            samples.append({})
            sizes.append(0)
        self.used += size - old
        sizes[slot] = size
        sample = {
            "query": request.query,
            "api_type": request.api_type,
            "start": request.start,
            "end": request.end,
            "step": request.step,
            "headers": kept,
            "now": self._wall(),
        }
        if actor:
            sample["actor"] = actor
        samples[slot] = sample

    def release(self, epochs: Iterable[Epoch]) -> None:
        """Give the budget back for epochs dropped with their key."""
        self.used -= sum(epoch.held() for epoch in epochs)

    def _tally(self, epoch: Epoch, actor: str) -> None:
        tally = epoch.actors
        if actor in tally:
            tally[actor] += 1
        elif not actor:  # one entry per epoch, as the epoch's own record: not text
            tally[actor] = 1
        elif len(tally) - ("" in tally) < self.max_actors_per_epoch:
            size = _TALLY_OVERHEAD + len(actor)
            if self.used + size <= self.max_bytes:
                tally[actor] = 1
                epoch.actor_bytes += size
                self.used += size

    def _kept_headers(self, request: Request, actor: str) -> dict[str, str]:
        """The headers the rules read, and the actor header with the path it was sent.

        The rules' headers are read in any case, as classification reads
        them, and kept under their canonical names. A kept header of the
        actor header's name (an actor header set to one the rules read) is
        the raw value admission parsed, and stays.
        """
        kept = rule_headers(request.headers)
        if actor:
            name = self._actor_header()
            if name.lower() not in {h.lower() for h in kept}:
                kept[name] = actor
        return kept
