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

from scheduler_core.model import COMPONENTS, Request
from scheduler_core.tree import DequeueContext, Node, TenantState

__all__ = ["SlotSet", "TenantOrder", "TenantRotation"]

# A component -> the round-robin pointer after serving it (as in RoundRobin).
_AFTER = {key: (i + 1) % len(COMPONENTS) for i, key in enumerate(COMPONENTS)}


class SlotSet:
    """A set of small non-negative ints with fast successor queries.

    Level 0 holds one bit per slot in 64-bit words; bit j of level k+1 is
    set exactly when word j of level k is non-zero. The top level is one word.

    While it has at most `SMALL` members, `small` also lists them sorted, so
    a successor is one C-level bisection however far apart the members are
    (few busy tenants among many idle placeholders); above that it is None
    and the bitmap answers. It comes back once the set shrinks to half of
    `SMALL`, so a set hovering at the bound does not rebuild it each time.
    """

    SMALL = 128

    __slots__ = ("_levels", "_size", "small")

    def __init__(self) -> None:
        self._levels: list[list[int]] = [[0]]
        self._size = 0
        self.small: list[int] | None = []

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
            if self._size > self.SMALL:
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
        """Every member, ascending, by successor walks (cost per member, not per slot)."""
        out: list[int] = []
        slot = self.successor(0)
        while slot >= 0:
            out.append(slot)
            slot = self.successor(slot + 1)
        return out

    def successor(self, slot: int) -> int:
        """The smallest member >= slot, or -1."""
        small = self.small
        if small is not None:
            k = bisect_left(small, slot)
            return small[k] if k < len(small) else -1
        levels = self._levels
        lvl = 0
        top = len(levels)
        while lvl < top:
            words = levels[lvl]
            w = slot >> 6
            if w >= len(words):
                return -1
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
        return -1


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


class _RotationState:
    """A rotating node's non-empty children, split by who may serve them."""

    __slots__ = ("by_querier", "everyone")

    def __init__(self) -> None:
        self.everyone = SlotSet()
        self.by_querier: dict[str, SlotSet] = {}


ShardOf = Callable[[str], Collection[str] | None]


class TenantRotation:
    """Queuing algorithm over tenant children, filtered by shuffle shard.

    A querier reserved for a tenant may be unable to take anything there;
    it then moves on to the next tenant instead of stalling (unlike Cortex).
    """

    __slots__ = ("_order", "_shard_of", "_tenants", "tenant_first")

    def __init__(
        self,
        order: TenantOrder,
        shard_of: ShardOf,
        tenants: Mapping[str, TenantState],
        tenant_first: bool,
    ) -> None:
        self._order = order
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
        state: _RotationState = node.state
        everyone = state.everyone
        by_querier = state.by_querier
        mine = by_querier.get(ctx.querier_id) if by_querier else None
        reserved = ctx.reserved
        last = ctx.last_tenant_index
        start = i = last + 1 if last >= 0 else 0
        wrapped = False
        while True:
            small = everyone.small
            if small is not None:
                k = bisect_left(small, i)
                cand = small[k] if k < len(small) else -1
            else:
                # Inlined level-0 probe: with many busy tenants the next one
                # is almost always in the same 64-slot word.
                words = everyone._levels[0]
                w = i >> 6
                bits = words[w] >> (i & 63) if w < len(words) else 0
                cand = i + (bits & -bits).bit_length() - 1 if bits else everyone.successor(i)
            if mine is not None:
                other = mine.successor(i)
                if other >= 0 and (cand < 0 or other < cand):
                    cand = other
            if cand < 0 or (wrapped and cand >= start):
                if wrapped or not start:
                    return None
                wrapped = True
                i = 0
                continue
            tenant = self._order.slots[cand]
            assert tenant is not None
            floor = ctx.min_priority = reserved.get(tenant.key) if reserved else None
            if self.tenant_first:
                leaf = tenant.only
                if leaf is None or leaf.queues is not None or leaf.dead is not None:
                    request = tenant.algorithm.dequeue(tenant, ctx)
                elif floor is None or leaf.prio >= floor:
                    # The component selection's one-leaf, one-priority case,
                    # inlined: serve the leaf and move the pointer past it.
                    ctx.leaf = leaf
                    request = leaf.popleft()
                    leaf.length -= 1
                    tenant.state = _AFTER[leaf.component]
                else:
                    request = None
            else:
                leaf = tenant.children[node.key]
                if leaf.queues is not None or leaf.dead is not None:
                    request = leaf.dequeue(ctx)
                elif floor is None or leaf.prio >= floor:
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
