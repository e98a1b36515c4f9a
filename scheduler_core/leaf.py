"""One leaf queue of the tree: every queued request of one (tenant, component).

A leaf keeps one FIFO deque per priority plus a descending list of the
priorities present, so the common case (one priority, no aging) is a plain
`popleft` and turning aging on or off never reorders anything: rank is
computed from the heads at dequeue time.

Cancellation is lazy but exact: a cancelled request is recorded in `_dead`
and its counters (`length`, each deque's `live`) drop at once; it is
physically removed when it reaches the head of its deque. Invariant: the
head of every deque is live, and a deque exists exactly while its priority
has at least one live request, so heads can be read without skipping and
`oldest_enqueued_at` is a min over heads.
"""

from __future__ import annotations

from bisect import insort
from collections import deque
from typing import TYPE_CHECKING

from scheduler_core.model import Request

if TYPE_CHECKING:
    from scheduler_core.tree import DequeueContext

__all__ = ["Leaf", "TenantState"]


class _Fifo(deque[Request]):
    """One priority's requests; `live` excludes cancelled ones still inside."""

    __slots__ = ("live",)

    def __init__(self) -> None:
        super().__init__()
        self.live = 0


class Leaf:
    """The requests of one tenant for one query component."""

    __slots__ = ("_dead", "_prios", "_queues", "component", "length", "tenant_id")

    def __init__(self, tenant_id: str, component: str) -> None:
        self.tenant_id = tenant_id
        self.component = component
        self.length = 0
        self._queues: dict[int, _Fifo] = {}
        # Negated priorities, ascending, so insort keeps "highest first".
        self._prios: list[int] = []
        # Cancelled requests still inside a deque; None while there are none.
        self._dead: set[Request] | None = None

    def __len__(self) -> int:
        return self.length

    def push(self, request: Request) -> None:
        """Append at the back of the request's priority (FIFO)."""
        if self._dead is not None and request in self._dead:
            self._compact()
        fifo = self._queues.get(request.priority)
        if fifo is None:
            fifo = self._new_priority(request.priority)
        fifo.live += 1
        self.length += 1
        fifo.append(request)

    def push_front(self, request: Request) -> None:
        """Put a request back at the front of its priority."""
        if self._dead is not None and request in self._dead:
            self._compact()
        fifo = self._queues.get(request.priority)
        if fifo is None:
            fifo = self._new_priority(request.priority)
        fifo.live += 1
        self.length += 1
        fifo.appendleft(request)

    def _new_priority(self, prio: int) -> _Fifo:
        fifo = self._queues[prio] = _Fifo()
        insort(self._prios, -prio)
        return fifo

    def _compact(self) -> None:
        """Drop cancelled copies so the same object can come back safely."""
        dead = self._dead
        assert dead is not None
        for fifo in self._queues.values():
            keep = [r for r in fifo if r not in dead]
            fifo.clear()
            fifo.extend(keep)
        self._dead = None

    def best_priority(self, min_priority: int | None, aging: float) -> int | None:
        """The priority whose head would be dequeued next, or None.

        With aging the winner is the head of highest rank
        `priority * aging - enqueued_at`; ties go to the higher priority.
        Only priorities >= `min_priority` are eligible.
        """
        prios = self._prios
        if not prios:
            return None
        if not aging:
            top = -prios[0]
            return top if min_priority is None or top >= min_priority else None
        best: int | None = None
        best_rank = 0.0
        queues = self._queues
        for neg in prios:
            prio = -neg
            if min_priority is not None and prio < min_priority:
                break
            rank = prio * aging - queues[prio][0].enqueued_at
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
        return prio * aging - self._queues[prio][0].enqueued_at

    def dequeue(self, ctx: DequeueContext) -> Request | None:
        """Tree entry point: pop under the context's floor and aging."""
        ctx.leaf = self
        if ctx.aging:
            return self.pop(ctx.min_priority, ctx.aging)
        # Hot path, inlined: strict priority, head of the highest one.
        prio = -self._prios[0]
        floor = ctx.min_priority
        if floor is not None and prio < floor:
            return None
        fifo = self._queues[prio]
        request = fifo.popleft()
        if fifo.live > 1 and self._dead is None:
            fifo.live -= 1
            self.length -= 1
        else:
            self._drop_one(prio, fifo)
        return request

    def pop(self, min_priority: int | None, aging: float) -> Request | None:
        """Remove and return the next eligible request, or None."""
        prio = self.best_priority(min_priority, aging)
        if prio is None:
            return None
        fifo = self._queues[prio]
        request = fifo.popleft()
        self._drop_one(prio, fifo)
        return request

    def remove(self, request: Request) -> None:
        """Cancel a queued request: counters drop now, memory on reaching the head."""
        prio = request.priority
        fifo = self._queues[prio]
        if fifo[0] is request:
            fifo.popleft()
        elif self._dead is None:
            self._dead = {request}
        else:
            self._dead.add(request)
        self._drop_one(prio, fifo)

    def _drop_one(self, prio: int, fifo: _Fifo) -> None:
        """One live request left `fifo`; restore the live-heads invariant."""
        self.length -= 1
        fifo.live -= 1
        dead = self._dead
        if fifo.live:
            if dead is not None:
                while fifo[0] in dead:
                    dead.discard(fifo.popleft())
                if not dead:
                    self._dead = None
            return
        # Only cancelled copies remain: forget them with the deque.
        if dead is not None:
            for r in fifo:
                dead.discard(r)
            if not dead:
                self._dead = None
        del self._queues[prio]
        self._prios.remove(-prio)

    def requests(self) -> list[Request]:
        """Live requests in dequeue order without aging (for drain)."""
        dead = self._dead or set()
        out: list[Request] = []
        for neg in self._prios:
            out.extend(r for r in self._queues[-neg] if r not in dead)
        return out

    def by_priority(self) -> tuple[tuple[int, int], ...]:
        """(priority, count) pairs, highest priority first."""
        queues = self._queues
        return tuple((-neg, queues[-neg].live) for neg in self._prios)

    def snapshot_row(self) -> tuple[tuple[tuple[int, int], ...], float]:
        """`by_priority()` and `oldest_enqueued_at()` in one call (snapshots)."""
        prios = self._prios
        if len(prios) == 1:
            fifo = self._queues[-prios[0]]
            return ((-prios[0], fifo.live),), fifo[0].enqueued_at
        return self.by_priority(), self.oldest_enqueued_at()

    def oldest_enqueued_at(self) -> float:
        """The earliest `enqueued_at` among the heads (0.0 when empty).

        Requests enter at the back with the current time and come back to
        the front only after having been the head, so the heads hold the
        oldest requests except after out-of-order front re-queues.
        """
        queues = self._queues
        if len(queues) == 1:
            for fifo in queues.values():
                return fifo[0].enqueued_at
        heads = [fifo[0].enqueued_at for fifo in queues.values()]
        return min(heads) if heads else 0.0


class TenantState:
    """One tenant's leaves and counters, kept together for one lookup per call.

    Lives while the tenant has queued or in-flight work or explicit limits;
    `leaves` holds exactly the non-empty leaves; `limit` is the explicit
    max_outstanding or None for the queue-wide default.
    """

    __slots__ = ("in_flight", "leaves", "limit", "queued")

    def __init__(self) -> None:
        self.leaves: dict[str, Leaf] = {}
        self.queued = 0
        self.in_flight = 0
        self.limit: int | None = None
