"""One node's queued requests in dequeue order, resumable from a cursor.

The order rules and what each costs are in `queue_listing`'s docstring;
this module plans the walk for a node (a leaf, a tenant, rounds over the
tenant order, or the component-first queue replayed) and says where it
stopped (`position()`), which is the cursor the service hands out.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from scheduler_core.listing_walks import COMPONENT_INDEX, Anchor, LeafWalk, SelectWalk
from scheduler_core.model import COMPONENTS, QueueConfig, Request
from scheduler_core.nodes import Node, TenantState

__all__ = ["ListingSource", "Predicate", "QueuedListing", "StaleCursor"]

Predicate = Callable[[Request], bool]
_N = len(COMPONENTS)


class ListingSource(Protocol):
    """The queue structures a listing reads (`queue_listing.QueueListing`)."""

    @property
    def config(self) -> QueueConfig: ...

    @property
    def tenant_first(self) -> bool: ...

    @property
    def tenants(self) -> Mapping[str, TenantState]: ...

    @property
    def slots(self) -> Sequence[TenantState | None]: ...

    @property
    def root(self) -> Node: ...

    @property
    def ids(self) -> Mapping[str, object]: ...


class StaleCursor(ValueError):
    """A cursor that does not belong to this node (or the layout changed)."""


def _anchor_of(raw: Any) -> Anchor | None:
    if raw is None:
        return None
    if not (isinstance(raw, list) and len(raw) == 3):
        raise StaleCursor("malformed cursor")
    prio, at, rid = raw
    if not (isinstance(prio, int) and isinstance(at, int | float) and isinstance(rid, str)):
        raise StaleCursor("malformed cursor")
    return (prio, float(at), rid)


def _int_field(raw: Any) -> int:
    if not isinstance(raw, int) or isinstance(raw, bool):
        raise StaleCursor("malformed cursor")
    return raw


class QueuedListing:
    """Queued requests under one node, in dequeue order (see the module docstring).

    An iterator; `position()` is the resume point just after the last
    request returned (JSON-ready), to pass back as `after`. `residual` is
    the part of the filter the walk itself does not apply (the priority of
    a band spanning several leaves), for `take_page` to apply. A leaf, or a
    tenant with one leaf, can also be read in bulk (`chunk`, which
    `take_page` uses): after a full page the listing is spent, so resume
    from `position()`.
    """

    def __init__(
        self,
        listing: ListingSource,
        *,
        tenant: str | None,
        component: str | None,
        priority: int | None,
        after: Any = None,
    ) -> None:
        self._listing = listing
        self.aging = listing.config.priority_aging_seconds
        self.residual: Predicate | None = None
        # Bulk reading (set by the plan where the walk allows it).
        self.chunk: Callable[[int], list[Request]] | None = None
        self._stop_at: Callable[[Request], None] | None = None
        if priority is not None and not (tenant is not None and component is not None):
            self.residual = _priority_is(priority)
        self.kind, self._iter = self._plan(tenant, component, priority, after)

    def __iter__(self) -> Iterator[Request]:
        return self

    def __next__(self) -> Request:
        return next(self._iter)

    # -- planning ------------------------------------------------------------
    def _plan(
        self, tenant: str | None, component: str | None, priority: int | None, after: Any
    ) -> tuple[str, Iterator[Request]]:
        listing = self._listing
        if tenant is not None and component is not None:
            kind = "leaf"
        elif tenant is not None:
            kind = "tenant"
        elif component is not None or listing.tenant_first:
            kind = "rounds"
        else:
            kind = "replay"
        state: list[Any] = []
        if after is not None:
            if not (isinstance(after, list) and after and after[0] == kind):
                raise StaleCursor("this cursor belongs to another node or layout")
            state = after[1:]
        self._state = state
        # Where the walk stands, computed only when asked: building it per
        # request would cost more than the walk itself.
        self._where: Callable[[], list[Any]] | None = None
        if kind == "leaf":
            assert tenant is not None and component is not None
            return kind, self._leaf(tenant, component, priority, state)
        if kind == "tenant":
            assert tenant is not None
            return kind, self._tenant(tenant, state)
        if kind == "rounds":
            return kind, self._rounds(component, state)
        return kind, self._replay(state)

    def stop_at(self, request: Request) -> None:
        """After a bulk page: stand just after its last row (`take_page` only)."""
        assert self._stop_at is not None
        self._stop_at(request)

    def position(self) -> list[Any]:
        if self._where is not None:
            return [self.kind, *self._where()]
        return [self.kind, *self._state]

    # -- one leaf --------------------------------------------------------------
    def _leaf(
        self, tenant: str, component: str, priority: int | None, state: list[Any]
    ) -> Iterator[Request]:
        if len(state) > 1:
            raise StaleCursor("malformed cursor")
        after = _anchor_of(state[0]) if state else None
        self._state = [list(after) if after else None]
        owner = self._listing.tenants.get(tenant)
        leaf = owner.children.get(component) if owner is not None else None
        if leaf is None:
            return iter(())
        walk = LeafWalk(
            leaf, self.aging, priority=priority, after=after, locate=self._listing.ids.get
        )

        def where() -> list[Any]:
            anchor = walk.anchor()
            return [list(anchor) if anchor is not None else None]

        self._where = where
        self.chunk, self._stop_at = walk.chunk, walk.stop_at
        return iter(walk)

    # -- one tenant ------------------------------------------------------------
    def _tenant_walk(
        self,
        owner: TenantState,
        pointer: int | None = None,
        anchors: Sequence[Anchor | None] = (None,) * _N,
        skip: int = 0,
    ) -> SelectWalk:
        listing = self._listing
        walks: list[LeafWalk | None] = [None] * _N
        for comp, leaf in owner.children.items():
            j = COMPONENT_INDEX[comp]
            walks[j] = LeafWalk(leaf, self.aging, after=anchors[j], locate=listing.ids.get)
        if listing.tenant_first:
            mode = "rank" if owner.priority_enabled else "round-robin"
            start = owner.state
        elif listing.config.component_selection == "querier-worker-priority":
            mode, start = "first", 0
        else:
            mode, start = "round-robin", listing.root.state
        if pointer is not None:
            start = pointer
        return SelectWalk(walks, int(start), mode, self.aging, skip)

    def _tenant(self, tenant: str, state: list[Any]) -> Iterator[Request]:
        owner = self._listing.tenants.get(tenant)
        pointer: int | None = None
        anchors: list[Anchor | None] = [None] * _N
        if state:
            if len(state) != 2 or not isinstance(state[1], list) or len(state[1]) != _N:
                raise StaleCursor("malformed cursor")
            pointer = _int_field(state[0])
            anchors = [_anchor_of(a) for a in state[1]]
        if owner is None or not owner.children:
            return iter(())
        walk = self._tenant_walk(owner, pointer, anchors)
        self._where = walk.position
        single = walk.single
        if single is not None:
            self.chunk, self._stop_at = walk.chunk, single.stop_at
        return self._tenant_steps(walk)

    def _tenant_steps(self, walk: SelectWalk) -> Iterator[Request]:
        take = walk.take
        while (request := take()) is not None:
            yield request

    # -- rounds over the tenant order -------------------------------------------
    def _rounds(self, component: str | None, state: list[Any]) -> Iterator[Request]:
        if state and len(state) != 2:
            raise StaleCursor("malformed cursor")
        rnd, after_slot = (_int_field(state[0]), _int_field(state[1])) if state else (0, -1)
        slots = self._listing.slots
        aging = self.aging

        def count(owner: TenantState) -> int:
            if component is None:
                return owner.queued
            leaf = owner.children.get(component)
            return leaf.length if leaf is not None else 0

        def walk_of(owner: TenantState, skip: int) -> LeafWalk | SelectWalk:
            if component is not None:
                return LeafWalk(owner.children[component], aging, skip=skip)
            if len(owner.children) == 1:
                (leaf,) = owner.children.values()
                return LeafWalk(leaf, aging, skip=skip)
            return self._tenant_walk(owner, skip=skip)

        walks: dict[int, LeafWalk | SelectWalk] = {}
        self._at = (rnd, after_slot)
        self._where = lambda: list(self._at) if self._at[1] >= 0 else []
        candidates: Sequence[int] = range(after_slot + 1, len(slots))
        partial = after_slot >= 0
        while True:
            survivors: list[int] = []
            for slot in candidates:
                owner = slots[slot]
                if owner is None:
                    continue
                n = count(owner)
                if n <= rnd:
                    continue
                walk = walks.get(slot)
                if walk is None:
                    walk = walks[slot] = walk_of(owner, rnd)
                request = walk.take()
                if request is None:
                    continue
                if n > rnd + 1:
                    survivors.append(slot)
                self._at = (rnd, slot)
                yield request
            if partial:
                # The first round started after a slot: the next one must
                # visit the tenants before it too.
                candidates, partial = range(len(slots)), False
            elif survivors:
                candidates = survivors
            else:
                return
            rnd += 1

    # -- the component-first queue, replayed -----------------------------------
    def _replay(self, state: list[Any]) -> Iterator[Request]:
        if state and len(state) != 1:
            raise StaleCursor("malformed cursor")
        skip = _int_field(state[0]) if state else 0
        self._done = skip
        self._where = lambda: [self._done]
        listing = self._listing
        slots = listing.slots
        qwqp = listing.config.component_selection == "querier-worker-priority"
        pointer: int = 0 if qwqp else int(listing.root.state)
        present: dict[str, list[int]] = {c: [] for c in COMPONENTS}
        for slot, owner in enumerate(slots):
            if owner is not None:
                for comp in owner.children:
                    present[comp].append(slot)
        walks: dict[tuple[str, int], LeafWalk] = {}
        last = -1
        done = 0
        while True:
            chosen = None
            for step in range(_N):
                j = step if qwqp else (pointer + step) % _N
                if present[COMPONENTS[j]]:
                    chosen = j
                    break
            if chosen is None:
                return
            comp = COMPONENTS[chosen]
            if not qwqp:
                pointer = (chosen + 1) % _N
            tenants = present[comp]
            i = bisect_right(tenants, last)
            if i == len(tenants):
                i = 0  # the rotation wraps around
            slot = tenants[i]
            walk = walks.get((comp, slot))
            if walk is None:
                owner = slots[slot]
                assert owner is not None
                walk = walks[(comp, slot)] = LeafWalk(owner.children[comp], self.aging)
            request = walk.take()
            assert request is not None
            if walk.peek() is None:
                del tenants[i]
                del walks[(comp, slot)]
            last = slot
            done += 1
            if done > skip:
                self._done = done
                yield request


def _priority_is(priority: int) -> Predicate:
    def matches(request: Request) -> bool:
        return request.priority == priority

    return matches
