"""The tree's building blocks: slot sets, the shared tenant order, pruning."""

from __future__ import annotations

import random

from scheduler_core.leaf import Leaf
from scheduler_core.model import COMPONENTS, Request
from scheduler_core.round_robin import RoundRobin
from scheduler_core.tenant_rotation import SlotSet, TenantOrder, TenantRotation
from scheduler_core.tree import Node, Tree


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


def test_tenant_order_reuses_the_lowest_placeholder() -> None:
    order = TenantOrder()
    assert [order.acquire(t) for t in "abcd"] == [0, 1, 2, 3]
    order.release("c")
    order.release("b")
    assert order.slots == ["a", None, None, "d"]
    assert order.acquire("e") == 1
    assert order.acquire("f") == 2
    assert order.acquire("g") == 4 and len(order) == 5


def make_tree(order: TenantOrder) -> Tree:
    return Tree(True, TenantRotation(order, lambda tenant: None), RoundRobin(COMPONENTS))


def test_empty_nodes_are_pruned_as_soon_as_their_last_leaf_leaves() -> None:
    order = TenantOrder()
    tree = make_tree(order)
    leaves = [Leaf("t", c) for c in COMPONENTS[:2]]
    order.acquire("t")
    for leaf in leaves:
        leaf.push(Request(id=leaf.component, tenant_id="t", component=leaf.component))
        tree.attach(leaf)
    tenant_node = tree.root.children["t"]
    assert isinstance(tenant_node, Node) and len(tenant_node.children) == 2
    tree.detach(leaves[0])
    assert list(tenant_node.children) == [COMPONENTS[1]]
    tree.detach(leaves[1])
    assert tree.root.children == {}
    assert tree.root.state.everyone.successor(0) == -1
    assert list(tree.tenant_nodes("t")) == []
