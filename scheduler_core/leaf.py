"""One leaf queue of the tree: every queued request of one (tenant, component).

A leaf keeps one FIFO deque per priority plus a descending list of the
priorities present, so the common case (one priority, no aging) is a plain
`popleft` and turning aging on or off never reorders anything: rank is
computed from the heads at dequeue time.

Cancellation is lazy but exact: a cancelled request is recorded in `_dead`
and its counters drop at once; it is physically removed when it reaches the
head of its deque. Invariant: the head of every deque is live, and a deque
exists exactly while its priority has at least one live request, so heads
can be read without skipping and `oldest_enqueued_at` is a min over heads.
"""

from __future__ import annotations

from bisect import insort
from collections import deque
from typing import TYPE_CHECKING

from scheduler_core.model import Request

if TYPE_CHECKING:
    from scheduler_core.tree import DequeueContext

__all__ = ["Leaf"]


class Leaf:
    """The requests of one tenant for one query component."""

    __slots__ = ("_counts", "_dead", "_prios", "_queues", "component", "length", "tenant_id")

    def __init__(self, tenant_id: str, component: str) -> None:
        self.tenant_id = tenant_id
        self.component = component
        self.length = 0
        self._queues: dict[int, deque[Request]] = {}
        self._counts: dict[int, int] = {}
        # Negated priorities, ascending, so insort keeps "highest first".
        self._prios: list[int] = []
        self._dead: set[Request] = set()

    def __len__(self) -> int:
        return self.length

    def push(self, request: Request) -> None:
        """Append at the back of the request's priority (FIFO)."""
        self._queue_for(request).append(request)

    def push_front(self, request: Request) -> None:
        """Put a request back at the front of its priority."""
        self._queue_for(request).appendleft(request)

    def _queue_for(self, request: Request) -> deque[Request]:
        if self._dead and request in self._dead:
            # The same object is coming back while its cancelled copy still
            # sits in a deque: drop those copies so identity stays unique.
            self._compact()
        prio = request.priority
        self.length += 1
        dq = self._queues.get(prio)
        if dq is None:
            dq = self._queues[prio] = deque()
            self._counts[prio] = 1
            insort(self._prios, -prio)
        else:
            self._counts[prio] += 1
        return dq

    def _compact(self) -> None:
        dead = self._dead
        for prio, dq in self._queues.items():
            self._queues[prio] = deque(r for r in dq if r not in dead)
        dead.clear()

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

    def pop(self, min_priority: int | None, aging: float) -> Request | None:
        """Remove and return the next eligible request, or None."""
        prios = self._prios
        if not aging and prios:
            prio = -prios[0]
            if min_priority is not None and prio < min_priority:
                return None
        else:
            found = self.best_priority(min_priority, aging)
            if found is None:
                return None
            prio = found
        dq = self._queues[prio]
        request = dq.popleft()
        self._drop_one(prio, dq)
        return request

    def dequeue(self, ctx: DequeueContext) -> Request | None:
        """Tree entry point: pop under the context's floor and aging."""
        ctx.leaf = self
        return self.pop(ctx.min_priority, ctx.aging)

    def remove(self, request: Request) -> None:
        """Cancel a queued request: counters drop now, memory on reaching the head."""
        prio = request.priority
        dq = self._queues[prio]
        if dq[0] is request:
            dq.popleft()
        else:
            self._dead.add(request)
        self._drop_one(prio, dq)

    def _drop_one(self, prio: int, dq: deque[Request]) -> None:
        self.length -= 1
        left = self._counts[prio] - 1
        dead = self._dead
        if left:
            self._counts[prio] = left
            if dead:
                while dq[0] in dead:
                    dead.discard(dq.popleft())
            return
        # Only cancelled copies remain: forget them with the deque.
        if dead:
            for r in dq:
                dead.discard(r)
        del self._queues[prio]
        del self._counts[prio]
        self._prios.remove(-prio)

    def requests(self) -> list[Request]:
        """Live requests in dequeue order without aging (for drain)."""
        dead = self._dead
        out: list[Request] = []
        for neg in self._prios:
            out.extend(r for r in self._queues[-neg] if r not in dead)
        return out

    def by_priority(self) -> tuple[tuple[int, int], ...]:
        """(priority, count) pairs, highest priority first."""
        counts = self._counts
        return tuple((-neg, counts[-neg]) for neg in self._prios)

    def oldest_enqueued_at(self) -> float:
        """The earliest `enqueued_at` among the heads (0.0 when empty).

        Requests enter at the back with the current time and come back to
        the front only after having been the head, so the heads hold the
        oldest requests except after out-of-order front re-queues.
        """
        heads = [dq[0].enqueued_at for dq in self._queues.values()]
        return min(heads) if heads else 0.0
