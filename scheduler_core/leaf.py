"""One leaf queue of the tree: every queued request of one (tenant, component).

A leaf is itself the FIFO deque while all its requests share one priority
and carry no actor path (the common case): no per-priority dict or list
exists, so a tenant costs one object per component and a dequeue is a plain
`popleft`. When a second priority or an actor path arrives the leaf
promotes itself to one `SubQueue` per priority plus a descending list of
the priorities present, and stays so until it empties. A `SubQueue` is a
FIFO while no request of its priority has an actor path, and else a tree of
actor sub-queues served round-robin (`actor_queue`, Loki's hierarchical
queues): priority still decides first, then actors take turns, FIFO within
one actor. Turning aging on or off never reorders anything: rank is
computed from the request each priority would serve next, at dequeue time.

Cancellation is lazy but exact: a cancelled request is recorded in `dead`
and the counters (`length`, each `SubQueue`'s `live`) drop at once; it is
physically removed when it reaches the head of its deque. Invariant: the
head of every deque is live, an empty leaf holds nothing physically, and in
multi-priority form a `SubQueue` exists exactly while its priority has a
live request, so heads can be read without skipping.
"""

from __future__ import annotations

from bisect import insort
from collections import deque
from math import inf
from typing import TYPE_CHECKING, Any

from scheduler_core.actor_queue import SubQueue, put_back
from scheduler_core.model import COMPONENTS, Request

if TYPE_CHECKING:
    from scheduler_core.nodes import DequeueContext, TenantState

__all__ = ["Leaf", "SubQueue"]

# A component -> the tenant's component round-robin pointer after serving it.
_AFTER = {key: (i + 1) % len(COMPONENTS) for i, key in enumerate(COMPONENTS)}
# Handed to sub-queue steps when nothing is cancelled; never written to
# (they only discard from a non-empty set).
_NO_DEAD: set[Request] = set()


class Leaf(deque[Request]):
    """The requests of one tenant for one query component.

    Single-priority form: `queues is None`, the deque holds every request and
    they all have priority `prio` and no actor path. Multi-priority form:
    the deque is empty and `queues`/`prios` hold them. `owner` is the tenant's record, so the
    queue never looks a tenant up by id after a dequeue (and the leaf keeps
    no tenant id of its own: `owner.key` is it).

    `plain` is `prio` while the leaf is in single form with no cancelled
    request inside, else None: then a push of that priority is a bare
    `append` and a pop a bare `popleft`, which the queue and the rotation do
    inline after one comparison. Every method that changes `prio`, `queues`
    or `dead` ends in `_sync()`; `after` is the tenant-first component
    round-robin pointer once this leaf was served.
    """

    __slots__ = (
        "after",
        "component",
        "dead",
        "length",
        "owner",
        "plain",
        "prio",
        "prios",
        "queues",
    )

    def __init__(self, component: str, owner: TenantState | None = None) -> None:
        super().__init__()
        self.component = component
        self.owner: Any = owner
        self.length = 0
        self.prio = 0
        self.queues: dict[int, SubQueue] | None = None
        # Negated priorities, ascending, so insort keeps "highest first".
        self.prios: list[int] | None = None
        # Cancelled requests still inside a deque; None while there are none.
        self.dead: set[Request] | None = None
        self.plain: int | None = 0
        self.after = _AFTER.get(component, 0)

    def _sync(self) -> None:
        self.plain = self.prio if self.queues is None and self.dead is None else None

    def __len__(self) -> int:
        return self.length

    def __bool__(self) -> bool:
        return self.length > 0

    def push(self, request: Request) -> None:
        """Append at the back of the request's priority (FIFO)."""
        self._add(request, False)

    def push_front(self, request: Request) -> None:
        """Put a request back at the front of its priority (behind older ones put back)."""
        self._add(request, True)

    def _add(self, request: Request, front: bool) -> None:
        if self.dead is not None and request in self.dead:
            self._compact()
        prio = request.priority
        if self.queues is None:
            if not self.length:
                self.prio = prio
            if prio == self.prio and not request.actor_path:
                self.length += 1
                if front:
                    put_back(self, request)
                else:
                    self.append(request)
                self._sync()
                return
            self._promote()
        queues = self.queues
        assert queues is not None
        fifo = queues.get(prio)
        if fifo is None:
            fifo = queues[prio] = SubQueue()
            assert self.prios is not None
            insort(self.prios, -prio)
        fifo.add(request, front)
        self.length += 1
        self._sync()

    def _promote(self) -> None:
        """Move the single deque's requests into a per-priority structure."""
        fifo = SubQueue()
        fifo.extend(self)
        fifo.live = fifo.local = self.length
        self.clear()
        self.queues = {self.prio: fifo}
        self.prios = [-self.prio]

    def _compact(self) -> None:
        """Drop cancelled copies so the same object can come back safely."""
        dead = self.dead
        assert dead is not None
        keep = [r for r in self if r not in dead]
        self.clear()
        self.extend(keep)
        if self.queues is not None:
            for fifo in self.queues.values():
                fifo.compact(dead)
        self.dead = None

    def best_priority(self, min_priority: int | None, aging: float) -> int | None:
        """The priority whose head would be dequeued next, or None.

        With aging the winner is the head of highest rank
        `priority * aging - enqueued_at`; ties go to the higher priority.
        Only priorities >= `min_priority` are eligible.
        """
        if not self.length:
            return None
        prios = self.prios
        if prios is None or not aging:
            top = self.prio if prios is None else -prios[0]
            return top if min_priority is None or top >= min_priority else None
        best: int | None = None
        best_rank = 0.0
        queues = self.queues
        assert queues is not None
        for neg in prios:
            prio = -neg
            if min_priority is not None and prio < min_priority:
                break
            rank = prio * aging - queues[prio].head().enqueued_at
            if best is None or rank > best_rank:
                best, best_rank = prio, rank
        return best

    def head_rank(self, min_priority: int | None, aging: float) -> float | None:
        """The rank of the head that would be dequeued next, or None."""
        prio = self.best_priority(min_priority, aging)
        if prio is None:
            return None
        if not aging:
            return float(prio)
        head = self[0] if self.queues is None else self.queues[prio].head()
        return prio * aging - head.enqueued_at

    def dequeue(self, ctx: DequeueContext) -> Request | None:
        """Tree entry point: pop under the context's floor and aging."""
        ctx.leaf = self
        if self.queues is None:
            # Hot path: one priority, so aging cannot reorder anything.
            floor = ctx.min_priority
            if floor is not None and self.prio < floor:
                return None
            request = self.popleft()
            self.length -= 1
            if self.dead is not None:
                self._skip_dead()
            return request
        return self.take(ctx.min_priority, ctx.aging)

    def take(self, min_priority: int | None, aging: float) -> Request | None:
        """Remove and return the next eligible request, or None."""
        prio = self.best_priority(min_priority, aging)
        if prio is None:
            return None
        if self.queues is None:
            request = self.popleft()
            self.length -= 1
            if self.dead is not None:
                self._skip_dead()
            return request
        fifo = self.queues[prio]
        dead = self.dead
        request = fifo.pop_next(_NO_DEAD if dead is None else dead)
        self._drop_one(prio, fifo)
        return request

    def remove(self, request: Request) -> None:
        """Cancel a queued request: counters drop now, memory on reaching the head."""
        queues = self.queues
        if queues is not None:
            fifo = queues[request.priority]
            dead = self.dead if self.dead is not None else set()
            fifo.cancel(request, dead)
            self.dead = dead
            self._drop_one(request.priority, fifo)
            return
        if self[0] is request:
            self.popleft()
        elif self.dead is None:
            self.dead = {request}
        else:
            self.dead.add(request)
        self.length -= 1
        self._skip_dead()

    def _skip_dead(self) -> None:
        """Single form: restore the live-head invariant after a removal."""
        dead = self.dead
        if dead is None:
            return
        if self.length:
            while self[0] in dead:
                dead.discard(self.popleft())
        else:
            for r in self:
                dead.discard(r)
            self.clear()
        if not dead:
            self.dead = None
        self._sync()

    def _drop_one(self, prio: int, fifo: SubQueue) -> None:
        """Multi form: one live request left `fifo` (its own counts and heads
        already restored by the sub-queue); prune the priority if it emptied."""
        self.length -= 1
        if self.dead is not None and not self.dead:
            self.dead = None
        if fifo.live:
            self._sync()
            return
        queues, prios = self.queues, self.prios
        assert queues is not None and prios is not None
        del queues[prio]
        prios.remove(-prio)
        if not prios:
            self.queues = self.prios = None
        self._sync()

    def requests(self) -> list[Request]:
        """Live requests in dequeue order without aging (for drain)."""
        dead = self.dead or set()
        if self.prios is None:
            return [r for r in self if r not in dead]
        queues = self.queues
        assert queues is not None
        out: list[Request] = []
        for neg in self.prios:
            out.extend(queues[-neg].walk(dead))
        return out

    def by_priority(self) -> tuple[tuple[int, int], ...]:
        """(priority, count) pairs, highest priority first."""
        prios = self.prios
        if prios is None:
            return ((self.prio, self.length),) if self.length else ()
        queues = self.queues
        assert queues is not None
        return tuple((-neg, queues[-neg].live) for neg in prios)

    def snapshot_row(self) -> tuple[tuple[tuple[int, int], ...], float, bool]:
        """`by_priority()`, `oldest_enqueued_at()` and `has_actors` in one pass (snapshots).

        One walk over the priorities instead of three: a snapshot runs this
        for every multi-priority leaf, ten thousand of them at 10,000 tenants.
        """
        if not self.length:
            return (), 0.0, False
        prios = self.prios
        if prios is None:
            return ((self.prio, self.length),), self[0].enqueued_at, False
        queues = self.queues
        assert queues is not None
        rows: list[tuple[int, int]] = []
        oldest = inf
        actors = False
        for neg in prios:
            fifo = queues[-neg]
            rows.append((-neg, fifo.live))
            if fifo.ring is None:
                # A plain FIFO's head is live and its oldest (module invariant).
                head = fifo[0].enqueued_at
            else:
                actors = True
                head = fifo.oldest()
            if head < oldest:
                oldest = head
        return tuple(rows), oldest, actors

    def oldest_enqueued_at(self) -> float:
        """The earliest `enqueued_at` among the heads (0.0 when empty).

        Requests enter at the back with the current time and come back to
        the front only after having been the head, so the heads hold the
        oldest requests except after out-of-order front re-queues.
        """
        if not self.length:
            return 0.0
        if self.queues is None:
            return self[0].enqueued_at
        return min(fifo.oldest() for fifo in self.queues.values())

    @property
    def has_actors(self) -> bool:
        """Whether some priority holds actor sub-queues."""
        queues = self.queues
        return queues is not None and any(f.ring is not None for f in queues.values())

    def actor_counts(self) -> dict[tuple[str, ...], list[float]]:
        """[count, oldest enqueued_at] per actor path, summed over priorities.

        Cost is per non-empty sub-queue (counts are kept as requests move),
        never per request; for snapshots, which cap how many they list.
        """
        out: dict[tuple[str, ...], list[float]] = {}
        if self.queues is not None:
            for fifo in self.queues.values():
                if fifo.ring is not None:
                    fifo.collect((), out)
        return out
