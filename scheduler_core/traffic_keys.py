"""The recorder's arrival counts: per (tenant, component, priority), a ring of bucket counts.

`ArrivalKeys` counts each arrival in its key's ring (one count per
`bucket_seconds` for the horizon: `slots` of them), for at most `max_keys`
keys. A key with no arrival for a whole horizon is forgotten to make room,
so a long-lived replica's past tenants and priorities do not crowd out
today's; when none is, the arrival is counted in `dropped` instead, which
the recording reports. Each key also carries its epochs of sampled
requests (`traffic_samples`); forgetting a key gives their bytes back
through `release`.

Actors are not part of the key: they are open-ended (one per user,
dashboard or job) and a key costs a ring of `slots` counts, so keys per
actor would fill `max_keys` and drop whole arrivals, where the actor
sub-queues only decide who *within* a key goes next. The key's epochs
count its actors instead.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from scheduler_core.model import Request
from scheduler_core.traffic_samples import Epoch

__all__ = ["ArrivalKeys", "Key"]


@dataclass(slots=True)
class Key:
    """One (tenant, component, priority): its count ring and its epochs of samples."""

    tenant_id: str
    component: str
    priority: int
    counts: array[int]
    last_bucket: int
    epochs: deque[Epoch]

    def count(self, bucket: int) -> None:
        counts = self.counts
        slots = len(counts)
        last = self.last_bucket
        if bucket != last:
            # Zero the slots of the buckets this key skipped since it was
            # last touched, so a slot never carries a count from an hour ago.
            for skipped in range(last + 1, min(bucket, last + slots) + 1):
                counts[skipped % slots] = 0
            self.last_bucket = bucket
        counts[bucket % slots] += 1


def _ring(slots: int) -> array[int]:
    return array("I", bytes(4 * slots))


class ArrivalKeys:
    """At most `max_keys` keys' count rings, and the arrivals past them (see module doc)."""

    def __init__(
        self, slots: int, max_keys: int, release: Callable[[Iterable[Epoch]], None]
    ) -> None:
        self.slots = slots
        self.max_keys = max_keys
        self.dropped = Key("", "", 0, _ring(slots), 0, deque())
        self._release = release
        self._keys: dict[tuple[str, str, int], Key] = {}
        self._swept_bucket = -1

    def arrival(self, request: Request, bucket: int) -> Key | None:
        """Count the request in its key; the key, or None when it was counted as dropped."""
        ident = (request.tenant_id, request.component, request.priority)
        key = self._keys.get(ident)
        if key is None:
            if len(self._keys) >= self.max_keys and not self._forget_idle(bucket):
                self.dropped.count(bucket)
                return None
            key = Key(*ident, _ring(self.slots), bucket, deque())
            self._keys[ident] = key
        key.count(bucket)
        return key

    def since(self, bucket: int) -> Iterator[Key]:
        """The keys with an arrival at or after `bucket`."""
        return (key for key in self._keys.values() if key.last_bucket >= bucket)

    def _forget_idle(self, bucket: int) -> bool:
        """Forget the keys with no arrival for a horizon; True if that made room for one.

        Such a key has nothing a window can reach. Looked for at most once a
        bucket, so a table full of live keys pays the scan once a bucket,
        not on every request of a new key.
        """
        if bucket == self._swept_bucket:
            return False
        self._swept_bucket = bucket
        idle = [
            ident for ident, key in self._keys.items() if key.last_bucket <= bucket - self.slots
        ]
        for ident in idle:
            self._release(self._keys.pop(ident).epochs)
        return len(self._keys) < self.max_keys
