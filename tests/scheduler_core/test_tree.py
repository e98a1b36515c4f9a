"""The tree's building blocks: slot sets, the shared tenant order, pruning."""

from __future__ import annotations

import random

from scheduler_core.leaf import Leaf
from scheduler_core.model import COMPONENTS, Request
from scheduler_core.round_robin import RoundRobin
from scheduler_core.tenant_rotation import END, SlotSet, TenantOrder, TenantRotation
from scheduler_core.tree import TenantState, Tree


def brute_successor(members: set[int], slot: int) -> int:
    return min((m for m in members if m >= slot), default=-1)


def test_slot_set_successor_matches_a_plain_set_across_levels() -> None:
    rng = random.Random(7)
    sset, model = SlotSet(), set()
    for _ in range(3000):
        slot = rng.choice([rng.randrange(70), rng.randrange(5000), rng.randrange(300_000)])
        if rng.random() < 0.6:
            sset.add(slot)
            model.add(slot)
        else:
            sset.discard(slot)
            model.discard(slot)
        probe = rng.randrange(300_100)
        assert sset.successor(probe) == brute_successor(model, probe)
        assert len(sset) == len(model)
    for member in list(model)[:50]:
        assert member in sset and sset.successor(member) == member


def test_slot_set_is_empty_after_removing_everything() -> None:
    sset = SlotSet()
    for slot in (0, 63, 64, 4095, 4096, 262_144):
        sset.add(slot)
    for slot in (0, 63, 64, 4095, 4096, 262_144):
        sset.discard(slot)
    assert len(sset) == 0 and sset.successor(0) == -1


def states(names: str) -> dict[str, TenantState]:
    algorithm = RoundRobin(COMPONENTS)
    return {name: TenantState(name, algorithm) for name in names}


def test_tenant_order_reuses_the_lowest_placeholder() -> None:
    order = TenantOrder()
    t = states("abcdefg")
    assert [order.acquire(t[name]) for name in "abcd"] == [0, 1, 2, 3]
    order.release(t["c"])
    order.release(t["b"])
    assert order.slots == [t["a"], None, None, t["d"]]
    assert (t["b"].slot, t["d"].slot) == (-1, 3)
    assert order.acquire(t["e"]) == 1
    assert order.acquire(t["f"]) == 2
    assert order.acquire(t["g"]) == 4 and len(order) == 5


def make_tree(order: TenantOrder, tenants: dict[str, TenantState]) -> Tree:
    rotation = TenantRotation(order, lambda tenant: None, tenants, True)
    return Tree(True, rotation, RoundRobin(COMPONENTS))


def test_empty_nodes_are_pruned_as_soon_as_their_last_leaf_leaves() -> None:
    order = TenantOrder()
    tenants = states("t")
    tree = make_tree(order, tenants)
    tenant = tenants["t"]
    leaves = [Leaf(c, tenant) for c in COMPONENTS[:2]]
    order.acquire(tenant)
    for leaf in leaves:
        leaf.push(Request(id=leaf.component, tenant_id="t", component=leaf.component))
        tenant.children[leaf.component] = leaf
        tree.attach(leaf, tenant)
    assert tree.root.children["t"] is tenant and len(tenant.children) == 2
    del tenant.children[leaves[0].component]
    tree.detach(leaves[0], tenant)
    assert list(tenant.children) == [COMPONENTS[1]]
    assert tree.root.children["t"] is tenant
    del tenant.children[leaves[1].component]
    tree.detach(leaves[1], tenant)
    assert tree.root.children == {}
    assert tree.root.state.everyone.successor(0) == -1
    assert list(tree.tenant_nodes("t")) == []


def test_slot_set_keeps_its_sorted_list_only_while_small_and_agrees_with_the_bitmap() -> None:
    rng = random.Random(11)
    sset, model = SlotSet(), set()
    small, half = SlotSet.SMALL, SlotSet.SMALL // 2
    members = rng.sample(range(200_000), small * 3)
    for slot in members:
        sset.add(slot)
        model.add(slot)
        assert (sset.small is not None) == (len(model) <= small)
        probe = rng.randrange(200_100)
        assert sset.successor(probe) == brute_successor(model, probe)
    for slot in members[: len(members) - half]:
        sset.discard(slot)
        model.discard(slot)
        # Rebuilt only at half the bound, so a set hovering at it does not churn.
        assert (sset.small is not None) == (len(model) <= half)
        probe = rng.randrange(200_100)
        assert sset.successor(probe) == brute_successor(model, probe)
    assert sset.small == [*sorted(model), END]
