"""Walking leaves in dequeue order without touching them (for `queue_listing`).

`LeafWalk` reads one leaf's FIFOs from a position: highest priority first
and FIFO within one, or with aging on merged by rank from the heads, which
is what `Leaf.take` does. A priority holding actor sub-queues is read in
their round-robin order (`SubQueue.walk`, what repeated dequeues take), and
the merge by rank compares the request each priority would serve next, as
`Leaf.take` does. `SelectWalk` merges a tenant's leaves the way one node's
component choice would serve them. Both hold deque iterators, so they live
within one synchronous step.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterator
from itertools import chain, filterfalse, islice
from operator import attrgetter
from typing import Any

from scheduler_core.leaf import Leaf, SubQueue
from scheduler_core.model import COMPONENTS, Request

__all__ = ["COMPONENT_INDEX", "Anchor", "LeafWalk", "Locate", "SelectWalk"]

# (priority, enqueued_at, request id) of the last request a leaf listed.
Anchor = tuple[int, float, str]
# Finds a queued request by id (the queue's id index `get`).
Locate = Callable[[str], object]

_N = len(COMPONENTS)
COMPONENT_INDEX = {c: i for i, c in enumerate(COMPONENTS)}
_enqueued_at = attrgetter("enqueued_at")
_physical_len = deque.__len__  # Leaf.__len__ counts live requests only


def _rank(request: Request, aging: float) -> float:
    if aging:
        return request.priority * aging - request.enqueued_at
    return float(request.priority)


def _fifos(leaf: Leaf, priority: int | None) -> list[tuple[int, deque[Request]]]:
    """The leaf's FIFOs, highest priority first (only `priority`'s when given)."""
    if leaf.queues is None:
        if not leaf.length or (priority is not None and leaf.prio != priority):
            return []
        return [(leaf.prio, leaf)]
    assert leaf.prios is not None
    queues = leaf.queues
    return [(-neg, queues[-neg]) for neg in leaf.prios if priority is None or -neg == priority]


def _after_anchor(
    fifo: deque[Request], size: int, at: float, rid: str, locate: Locate | None
) -> int:
    """Index just after the anchor in its own FIFO.

    Requests are appended in time order, so a binary search on `enqueued_at`
    places the anchor, and identity among the equal times confirms it. A
    still-queued anchor the search misses (a front re-queue left the FIFO
    out of time order) is found by a C-level scan up to it, which is exact
    but costs its index: a search stepping through a 100,000-request leaf
    resumed with that scan 6 times a page, 7 ms of its 20. One that left
    resumes at its time (may repeat equal-time rows).
    """
    found = locate(rid) if locate is not None else None
    i = bisect_left(fifo, at, 0, size, key=_enqueued_at)
    j = i
    while j < size and fifo[j].enqueued_at == at:
        if fifo[j].id == rid:
            return j + 1
        j += 1
    if isinstance(found, Request):
        try:
            return fifo.index(found, 0, size) + 1
        except ValueError:
            pass
    return i


def _start(
    fifo: deque[Request], prio: int, anchor: Anchor, aging: float, locate: Locate | None
) -> int:
    """Index of the first request of `fifo` that the leaf's order puts after `anchor`."""
    size = _physical_len(fifo)
    a_prio, a_at, a_id = anchor
    if prio == a_prio:
        return _after_anchor(fifo, size, a_at, a_id, locate)
    if not aging:
        return size if prio > a_prio else 0
    # Order by key = enqueued_at - priority * aging (minus the rank), ties
    # to the higher priority: so a higher FIFO is after the anchor from a
    # strictly greater key on, a lower one from an equal key on.
    bound = a_at - a_prio * aging

    def key(r: Request) -> float:
        return r.enqueued_at - prio * aging

    if prio > a_prio:
        return bisect_right(fifo, bound, 0, size, key=key)
    return bisect_left(fifo, bound, 0, size, key=key)


def _actor_part(
    fifo: SubQueue,
    prio: int,
    after: Anchor | None,
    aging: float,
    locate: Locate | None,
    dead: set[Request] | None,
) -> Iterator[Request]:
    """One priority's requests in actor round-robin order, from after `after`.

    Round-robin order is not time order, so a cursor resumes by identity:
    the anchor, if still queued here, is skipped to; one that left restarts
    this priority from its next request (rows may repeat). Across
    priorities with aging, the bound on rank filters instead of bisecting.
    """
    # Cancelled requests must not take a turn: the walk skips them itself.
    stream = fifo.walk(dead)
    if after is None:
        return stream
    a_prio, a_at, a_id = after
    if prio == a_prio:
        found = locate(a_id) if locate is not None else None
        if isinstance(found, Request) and found.priority == prio:
            rows = list(stream)
            for i, request in enumerate(rows):
                if request is found:
                    return iter(rows[i + 1 :])
            return iter(rows)
        return stream
    if not aging:
        return iter(()) if prio > a_prio else stream
    bound = a_at - a_prio * aging
    if prio > a_prio:
        return (r for r in stream if r.enqueued_at - prio * aging > bound)
    return (r for r in stream if r.enqueued_at - prio * aging >= bound)


class LeafWalk:
    """One leaf's live requests in the order its dequeues take them, peekable."""

    __slots__ = ("_after", "_it", "_next", "last")

    def __init__(
        self,
        leaf: Leaf,
        aging: float,
        *,
        priority: int | None = None,
        after: Anchor | None = None,
        skip: int = 0,
        locate: Locate | None = None,
    ) -> None:
        parts: list[Iterator[Request]] = []
        for prio, fifo in _fifos(leaf, priority):
            if isinstance(fifo, SubQueue) and fifo.ring is not None:
                parts.append(_actor_part(fifo, prio, after, aging, locate, leaf.dead))
                continue
            start = 0 if after is None else _start(fifo, prio, after, aging, locate)
            if start < _physical_len(fifo):
                parts.append(islice(fifo, start, None) if start else iter(fifo))
        dead = leaf.dead
        if dead:
            parts = [filterfalse(dead.__contains__, it) for it in parts]
        stream: Iterator[Request]
        if len(parts) == 1:
            stream = parts[0]
        elif aging:
            # Heads merged by rank, ties to the earlier (higher) FIFO: Leaf.take.
            stream = heapq.merge(*parts, key=lambda r: r.enqueued_at - r.priority * aging)
        else:
            stream = chain.from_iterable(parts)
        if skip:
            stream = islice(stream, skip, None)
        self._it = stream
        self._next: Request | None = next(stream, None)
        self._after = after
        self.last: Request | None = None

    def peek(self) -> Request | None:
        return self._next

    def __iter__(self) -> Iterator[Request]:
        """Take every remaining request (the plain listing of one leaf)."""
        request = self._next
        if request is None:
            return
        self._next = None
        self.last = request
        yield request
        for request in self._it:
            self.last = request
            yield request

    def take(self) -> Request | None:
        request = self._next
        if request is not None:
            self._next = next(self._it, None)
            self.last = request
        return request

    def chunk(self, n: int) -> list[Request]:
        """The next `n` requests at most, as `n` takes return them, in one C-level slice.

        Not to be mixed with iterating the walk: a chunk takes from the same stream.
        """
        first = self._next
        out = [] if first is None else [first]
        if n > len(out):
            out += islice(self._it, n - len(out))
        self._next = next(self._it, None)
        if out:
            self.last = out[-1]
        return out

    def stop_at(self, request: Request) -> None:
        """Stand just after `request`, which the last chunk returned; the walk is spent.

        A bulk page reads past its last row; its position must not.
        """
        self.last = request
        self._next = None
        self._it = iter(())

    def anchor(self) -> Anchor | None:
        last = self.last
        if last is None:
            return self._after
        return (last.priority, last.enqueued_at, last.id)


class SelectWalk:
    """A tenant's leaves merged as one node's component choice serves them.

    `mode`: "round-robin" (first present from the pointer), "rank" (highest
    head first, ties to the first from the pointer: the tenant-first
    selection of a tenant with priority enabled), "first" (the first
    present in `COMPONENTS` order: querier-worker priority's worker 0).
    """

    __slots__ = ("_aging", "_mode", "_only", "pointer", "walks")

    def __init__(
        self, walks: list[LeafWalk | None], pointer: int, mode: str, aging: float, skip: int = 0
    ) -> None:
        self.walks = walks
        self.pointer = pointer % _N
        self._mode = mode
        self._aging = aging
        present = [j for j, w in enumerate(walks) if w is not None]
        self._only = present[0] if len(present) == 1 else None
        for _ in range(skip):
            if self.take() is None:
                break

    def _choose(self) -> int:
        walks = self.walks
        if self._mode == "first":
            for j in range(_N):
                walk = walks[j]
                if walk is not None and walk.peek() is not None:
                    return j
            return -1
        best, best_rank = -1, 0.0
        for step in range(_N):
            j = (self.pointer + step) % _N
            walk = walks[j]
            head = walk.peek() if walk is not None else None
            if head is None:
                continue
            if self._mode == "round-robin":
                return j
            rank = _rank(head, self._aging)
            if best < 0 or rank > best_rank:
                best, best_rank = j, rank
        return best

    def take(self) -> Request | None:
        only = self._only
        if only is not None:
            # One leaf: every mode serves it; only the pointer moves.
            walk = self.walks[only]
            assert walk is not None
            request = walk.take()
            if request is not None and self._mode != "first":
                self.pointer = (only + 1) % _N
            return request
        j = self._choose()
        if j < 0:
            return None
        walk = self.walks[j]
        assert walk is not None
        if self._mode != "first":
            self.pointer = (j + 1) % _N
        return walk.take()

    @property
    def single(self) -> LeafWalk | None:
        """The one leaf walk, when the tenant has one leaf (then chunks can be taken)."""
        return None if self._only is None else self.walks[self._only]

    def chunk(self, n: int) -> list[Request]:
        """`LeafWalk.chunk` of the single leaf, the pointer moved as takes move it."""
        only = self._only
        assert only is not None, "chunks need a tenant with one leaf"
        walk = self.walks[only]
        assert walk is not None
        got = walk.chunk(n)
        if got and self._mode != "first":
            self.pointer = (only + 1) % _N
        return got

    def position(self) -> list[Any]:
        anchors = [w.anchor() if w is not None else None for w in self.walks]
        return [self.pointer, [list(a) if a is not None else None for a in anchors]]
