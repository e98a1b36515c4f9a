"""Tenant fairness: the shared tenant order and the rotation over it.

Every worker passes back the index of the tenant it was served from last
time and gets the next tenant after it, as in Mimir. The order is one list
shared by all nodes that rotate over tenants; a tenant that leaves frees its
slot as a placeholder and a new tenant takes the lowest free slot, so a saved
index never makes a worker skip a tenant. The index wraps by comparison.

To keep a dequeue independent of the number of tenants, a rotating node never
walks the order: it keeps the slots of its non-empty children in `SlotSet`s
(a 64-ary bitmap tree with O(log64 n) successor queries), one for tenants
every querier may serve and one per querier for sharded tenants, so the next
candidate for a querier is the smaller of two successor lookups.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections.abc import Callable, Collection, Mapping
from typing import Any

from scheduler_core.model import Request
from scheduler_core.nodes import DequeueContext, Node, TenantState

__all__ = ["END", "SlotSet", "TenantOrder", "TenantRotation"]

# Above every slot: "no member" in successor searches, so a minimum needs no -1 test.
END = 1 << 62


class SlotSet:
    """A set of small non-negative ints with fast successor queries.

    Level 0 holds one bit per slot in 64-bit words; bit j of level k+1 is
    set exactly when word j of level k is non-zero. The top level is one word.

    While it has at most `SMALL` members, `small` also lists them sorted and
    ends with the sentinel `END`, so a successor is one C-level bisection
    however far apart the members are (few busy tenants among many idle
    placeholders); above that it is None and the bitmap answers. It comes
    back once the set shrinks to half of `SMALL`, so a set hovering at the
    bound does not rebuild it each time.
    """

    SMALL = 128

    __slots__ = ("_levels", "_size", "small")

    def __init__(self) -> None:
        self._levels: list[list[int]] = [[0]]
        self._size = 0
        self.small: list[int] | None = [END]

    def __len__(self) -> int:
        return self._size

    def __contains__(self, slot: int) -> bool:
        words = self._levels[0]
        w = slot >> 6
        return w < len(words) and bool(words[w] >> (slot & 63) & 1)

    def _grow(self, word: int) -> None:
        levels = self._levels
        need = word + 1
        for words in levels:
            if len(words) < need:
                words.extend([0] * (need - len(words)))
            need = ((len(words) - 1) >> 6) + 1
        while len(levels[-1]) > 1:
            top = levels[-1]
            summary = [0] * (((len(top) - 1) >> 6) + 1)
            for j, value in enumerate(top):
                if value:
                    summary[j >> 6] |= 1 << (j & 63)
            levels.append(summary)

    def add(self, slot: int) -> None:
        levels = self._levels
        w = slot >> 6
        if w >= len(levels[0]):
            self._grow(w)
        words = levels[0]
        old = words[w]
        bit = 1 << (slot & 63)
        if old & bit:
            return
        words[w] = old | bit
        self._size += 1
        small = self.small
        if small is not None:
            if len(small) > self.SMALL:
                self.small = None
            else:
                insort(small, slot)
        lvl = 1
        while not old and lvl < len(levels):
            slot = w
            w = slot >> 6
            words = levels[lvl]
            old = words[w]
            words[w] = old | (1 << (slot & 63))
            lvl += 1

    def discard(self, slot: int) -> None:
        levels = self._levels
        words = levels[0]
        w = slot >> 6
        if w >= len(words):
            return
        bit = 1 << (slot & 63)
        new = words[w]
        if not new & bit:
            return
        new ^= bit
        words[w] = new
        self._size -= 1
        small = self.small
        if small is not None:
            del small[bisect_left(small, slot)]
        lvl = 1
        while not new and lvl < len(levels):
            slot = w
            w = slot >> 6
            words = levels[lvl]
            new = words[w] & ~(1 << (slot & 63))
            words[w] = new
            lvl += 1
        if small is None and self._size <= self.SMALL >> 1:
            self.small = self._members()

    def _members(self) -> list[int]:
        """Every member, ascending, then `END`, by successor walks (cost per member)."""
        out: list[int] = []
        slot = self.next_at(0)
        while slot != END:
            out.append(slot)
            slot = self.next_at(slot + 1)
        out.append(END)
        return out

    def successor(self, slot: int) -> int:
        """The smallest member >= slot, or -1."""
        found = self.next_at(slot)
        return found if found != END else -1

    def next_at(self, slot: int) -> int:
        """The smallest member >= slot, or `END` (which compares above them all)."""
        small = self.small
        if small is not None:
            return small[bisect_left(small, slot)]
        levels = self._levels
        lvl = 0
        top = len(levels)
        while lvl < top:
            words = levels[lvl]
            w = slot >> 6
            if w >= len(words):
                return END
            bits = words[w] >> (slot & 63)
            if bits:
                slot += (bits & -bits).bit_length() - 1
                while lvl:
                    lvl -= 1
                    word = levels[lvl][slot]
                    slot = (slot << 6) | ((word & -word).bit_length() - 1)
                return slot
            slot = w + 1
            lvl += 1
        return END


class TenantOrder:
    """Slots of the tenants that have queued work, shared by every rotation.

    A slot holds the tenant's record itself, so a rotation goes from a slot
    to the tenant without a dict lookup.
    """

    __slots__ = ("_free", "slots")

    def __init__(self) -> None:
        self.slots: list[TenantState | None] = []
        self._free: list[int] = []

    def __len__(self) -> int:
        return len(self.slots) - len(self._free)

    def acquire(self, tenant: TenantState) -> int:
        """Give the tenant the lowest free placeholder, or a new slot."""
        if self._free:
            slot = heapq.heappop(self._free)
            self.slots[slot] = tenant
        else:
            slot = len(self.slots)
            self.slots.append(tenant)
        tenant.slot = slot
        return slot

    def release(self, tenant: TenantState) -> None:
        """Leave a placeholder so saved indices keep their meaning."""
        slot = tenant.slot
        tenant.slot = -1
        self.slots[slot] = None
        heapq.heappush(self._free, slot)

    def clear(self) -> None:
        for tenant in self.slots:
            if tenant is not None:
                tenant.slot = -1
        self.slots.clear()
        self._free.clear()


class _RotationState(SlotSet):
    """A rotating node's non-empty children, split by who may serve them.

    Itself the set of tenants every querier may serve (one object less on
    the hot path); `by_querier` holds one set per querier for sharded ones.
    """

    __slots__ = ("by_querier",)

    def __init__(self) -> None:
        super().__init__()
        self.by_querier: dict[str, SlotSet] = {}

    @property
    def everyone(self) -> SlotSet:
        return self


ShardOf = Callable[[str], Collection[str] | None]


class TenantRotation:
    """Queuing algorithm over tenant children, filtered by shuffle shard.

    A querier reserved for a tenant may be unable to take anything there;
    it then moves on to the next tenant instead of stalling (unlike Cortex).
    """

    __slots__ = ("_order", "_shard_of", "_slots", "_tenants", "tenant_first")

    def __init__(
        self,
        order: TenantOrder,
        shard_of: ShardOf,
        tenants: Mapping[str, TenantState],
        tenant_first: bool,
    ) -> None:
        self._order = order
        # The order's list itself: it is only ever changed in place.
        self._slots = order.slots
        self._shard_of = shard_of
        self._tenants = tenants
        self.tenant_first = tenant_first

    def new_state(self) -> _RotationState:
        return _RotationState()

    def _sets(self, state: _RotationState, shard: Collection[str] | None) -> list[SlotSet]:
        if shard is None:
            return [state.everyone]
        by_q = state.by_querier
        return [by_q[q] if q in by_q else by_q.setdefault(q, SlotSet()) for q in shard]

    def on_add(self, node: Node, key: str) -> None:
        slot = self._tenants[key].slot
        for sset in self._sets(node.state, self._shard_of(key)):
            sset.add(slot)

    def on_remove(self, node: Node, key: str) -> None:
        self._remove(node.state, self._tenants[key].slot, self._shard_of(key))

    def _remove(self, state: _RotationState, slot: int, shard: Collection[str] | None) -> None:
        if shard is None:
            state.everyone.discard(slot)
            return
        by_q = state.by_querier
        for q in shard:
            sset = by_q.get(q)
            if sset is not None:
                sset.discard(slot)
                if not sset:
                    del by_q[q]

    def reshard(
        self, node: Node, key: str, old: Collection[str] | None, new: Collection[str] | None
    ) -> None:
        """Move a present tenant from its old shard's sets to its new one's."""
        slot = self._tenants[key].slot
        self._remove(node.state, slot, old)
        for sset in self._sets(node.state, new):
            sset.add(slot)

    def dequeue(self, node: Node, ctx: DequeueContext) -> Request | None:
        everyone: _RotationState = node.state
        by_querier = everyone.by_querier
        mine = by_querier.get(ctx.querier_id) if by_querier else None
        reserved = ctx.reserved
        last = ctx.last_tenant_index
        start = i = last + 1 if last >= 0 else 0
        limit = END  # becomes `start` once the search wrapped around
        while True:
            small = everyone.small
            if small is not None:
                cand = small[bisect_left(small, i)]
            else:
                # Inlined level-0 probe: with many busy tenants the next one
                # is almost always in the same 64-slot word.
                words = everyone._levels[0]
                w = i >> 6
                bits = words[w] >> (i & 63) if w < len(words) else 0
                cand = i + (bits & -bits).bit_length() - 1 if bits else everyone.next_at(i)
            if mine is not None:
                other = mine.next_at(i)
                if other < cand:
                    cand = other
            if cand >= limit:
                if limit != END or not start:
                    return None
                limit = start
                i = 0
                continue
            # Any: a slot with a set bit always holds its tenant.
            tenant: Any = self._slots[cand]
            floor = reserved.get(tenant.key) if reserved else None
            request: Request | None
            if self.tenant_first:
                leaf = tenant.only
                if leaf is None or leaf.plain is None:
                    ctx.min_priority = floor
                    request = tenant.algorithm.dequeue(tenant, ctx)
                elif floor is None or leaf.plain >= floor:
                    # The component selection's one-leaf, one-priority case,
                    # inlined: serve the leaf and move the pointer past it.
                    ctx.leaf = leaf
                    request = leaf.popleft()
                    leaf.length -= 1
                    tenant.state = leaf.after
                else:
                    request = None
            else:
                leaf = tenant.only
                if leaf is None or leaf.component != node.key:
                    leaf = tenant.children[node.key]
                if leaf.plain is None:
                    ctx.min_priority = floor
                    request = leaf.dequeue(ctx)
                elif floor is None or leaf.plain >= floor:
                    # Leaf.dequeue's single-priority path, inlined.
                    ctx.leaf = leaf
                    request = leaf.popleft()
                    leaf.length -= 1
                else:
                    request = None
            if request is not None:
                ctx.tenant_index = cand
                return request
            i = cand + 1
