"""Actor sub-queues (Loki's hierarchical tenant queues) under one priority of one leaf.

A request may carry an actor path (`X-Loki-Actor-Path: users|joe` is
`("users", "joe")`), already cut to `max_queue_hierarchy_levels` by the
queue. Within one priority of one (tenant, component) leaf, requests are
held in a tree of `SubQueue`s by that path. A node is itself a FIFO deque,
its *local* queue (the requests whose path ends there), plus `ring`, the
turn order of its non-empty entries: `LOCAL` (None) for the local queue and
each child by name. A dequeue serves the ring's first entry (one request,
recursively for a child) and moves it to the back, or drops it once empty,
so at every level the local queue and each child sub-queue take turns, as
Loki's TreeQueue does: two actors plus local work each get a third.

The ring is an OrderedDict, so every step (first entry, move to the back,
drop by name) is O(1): a dequeue costs O(depth) whatever the number of
actors, and an actor with nothing queued has no node at all (entries are
pruned the moment they empty, by a dequeue or a cancel). A node with no
child keeps `ring` None and is then a plain deque.

Cancellation is lazy but exact, as in `Leaf`: a cancelled request not at a
head goes into the leaf's `dead` set and every count drops at once.
Invariants, for every node: `live` counts the live requests of its subtree
and `local` those of its own deque; the head of its deque is live; a deque
with no live request is physically empty; `LOCAL` is in the ring exactly
while `local` > 0, and a child exactly while its `live` > 0.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterator
from itertools import filterfalse
from math import inf

from scheduler_core.model import Request

__all__ = ["LOCAL", "SubQueue", "put_back"]

# The ring's key for a node's own (local) queue; actor names are non-empty strings.
LOCAL = None


def put_back(fifo: deque[Request], request: Request) -> None:
    """Put `request` at the front of `fifo`, behind requests that came before it.

    Everything a FIFO still holds arrived after the request it served last,
    except requests put back, so only the front run of those is scanned.
    A lost querier's requests return one at a time, in whatever order its
    worker streams end; each put plainly at the front overtook the last,
    and they came back reversed (3, 2, 1) or shuffled.
    """
    at = request.enqueued_at
    i = 0
    for queued in fifo:
        if queued.enqueued_at >= at:
            break
        i += 1
    if i:
        fifo.insert(i, request)
    else:
        fifo.appendleft(request)


class SubQueue(deque[Request]):
    """One actor's requests at one priority: its local FIFO and its children."""

    __slots__ = ("live", "local", "ring")

    def __init__(self) -> None:
        super().__init__()
        self.live = 0
        self.local = 0
        self.ring: OrderedDict[str | None, SubQueue | None] | None = None

    # -- adding -------------------------------------------------------------
    def add(self, request: Request, front: bool) -> None:
        """Queue at the back of the request's actor (the front, and its turn next, if `front`)."""
        node = self
        for name in request.actor_path:
            node.live += 1
            ring = node.ring
            if ring is None:
                ring = node.ring = OrderedDict()
                if node.local:
                    ring[LOCAL] = None
            child = ring.get(name)
            if child is None:
                child = ring[name] = SubQueue()
            if front:
                # A request put back at the front is served next, so its
                # branch takes the next turn at every level.
                ring.move_to_end(name, last=False)
            node = child
        node.live += 1
        node.local += 1
        ring = node.ring
        if ring is not None:
            if node.local == 1:
                ring[LOCAL] = None
            if front:
                ring.move_to_end(LOCAL, last=False)
        if front:
            put_back(node, request)
        else:
            node.append(request)

    # -- taking -------------------------------------------------------------
    def head(self) -> Request:
        """The request `pop_next` would return (the subtree must be non-empty)."""
        node = self
        while True:
            ring = node.ring
            if ring is None:
                return node[0]
            key = next(iter(ring))
            if key is None:
                return node[0]
            child = ring[key]
            assert child is not None
            node = child

    def pop_next(self, dead: set[Request]) -> Request:
        """Remove and return the next request in round-robin order."""
        self.live -= 1
        ring = self.ring
        if ring is None:
            return self._pop_local(dead)
        key = next(iter(ring))
        if key is None:
            request = self._pop_local(dead)
            if self.local:
                ring.move_to_end(LOCAL)
            else:
                del ring[LOCAL]
        else:
            child = ring[key]
            assert child is not None
            request = child.pop_next(dead)
            if child.live:
                ring.move_to_end(key)
            else:
                del ring[key]
        # _collapse, inlined: this runs once per level of every dequeue.
        if len(ring) <= 1 and (not ring or LOCAL in ring):
            self.ring = None
        return request

    def _pop_local(self, dead: set[Request]) -> Request:
        request = self.popleft()
        self.local -= 1
        if dead:
            self._restore_head(dead)
        return request

    def _restore_head(self, dead: set[Request]) -> None:
        """After a removal from the local deque: a live head, or an empty deque."""
        if self.local:
            while self[0] in dead:
                dead.discard(self.popleft())
        else:
            for r in self:
                dead.discard(r)
            self.clear()

    def _collapse(self, ring: OrderedDict[str | None, SubQueue | None]) -> None:
        # No child left: the node is a plain deque again (or empty).
        if not ring or (len(ring) == 1 and LOCAL in ring):
            self.ring = None

    def cancel(self, request: Request, dead: set[Request]) -> None:
        """Cancel a queued request: counts drop and emptied sub-queues go now."""
        trail: list[tuple[SubQueue, str]] = []
        node = self
        for name in request.actor_path:
            node.live -= 1
            assert node.ring is not None
            child = node.ring[name]
            assert child is not None
            trail.append((node, name))
            node = child
        node.live -= 1
        node.local -= 1
        if node[0] is request:
            node.popleft()
        else:
            dead.add(request)
        node._restore_head(dead)
        ring = node.ring
        if ring is not None and not node.local:
            del ring[LOCAL]
            node._collapse(ring)
        for parent, name in reversed(trail):
            if node.live:
                break
            parent_ring = parent.ring
            assert parent_ring is not None
            del parent_ring[name]
            parent._collapse(parent_ring)
            node = parent

    # -- reading ------------------------------------------------------------
    def walk(self, dead: set[Request] | None = None) -> Iterator[Request]:
        """Live requests in the order repeated `pop_next` calls would return them."""
        ring = self.ring
        local: Iterator[Request] = filterfalse(dead.__contains__, self) if dead else iter(self)
        if ring is None:
            yield from local
            return
        turns: deque[Iterator[Request]] = deque(
            local if child is None else child.walk(dead) for child in ring.values()
        )
        while turns:
            request = next(turns[0], None)
            if request is None:
                turns.popleft()
                continue
            yield request
            turns.rotate(-1)

    def oldest(self) -> float:
        """The earliest `enqueued_at` among the subtree's heads (inf when empty)."""
        best = self[0].enqueued_at if self.local else inf
        ring = self.ring
        if ring is not None:
            for child in ring.values():
                if child is not None:
                    best = min(best, child.oldest())
        return best

    def collect(self, path: tuple[str, ...], out: dict[tuple[str, ...], list[float]]) -> float:
        """Add [count, oldest] per actor path below this node to `out`; the subtree's oldest.

        Cost is per non-empty sub-queue, never per request: counts are kept.
        """
        best = self[0].enqueued_at if self.local else inf
        ring = self.ring
        if ring is not None:
            for key, child in ring.items():
                if child is None or key is None:
                    continue
                sub = (*path, key)
                oldest = child.collect(sub, out)
                row = out.get(sub)
                if row is None:
                    out[sub] = [float(child.live), oldest]
                else:
                    row[0] += child.live
                    row[1] = min(row[1], oldest)
                best = min(best, oldest)
        return best

    def compact(self, dead: set[Request]) -> None:
        """Drop cancelled copies physically (so the same object can come back)."""
        keep = [r for r in self if r not in dead]
        self.clear()
        self.extend(keep)
        ring = self.ring
        if ring is not None:
            for child in ring.values():
                if child is not None:
                    child.compact(dead)
