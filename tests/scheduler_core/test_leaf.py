"""The leaf queue: priority order, FIFO within a priority, lazy exact cancel."""

from __future__ import annotations

import random

from scheduler_core.leaf import Leaf
from scheduler_core.model import Request


def req(rid: str, priority: int = 0, at: float = 0.0) -> Request:
    return Request(id=rid, tenant_id="t", priority=priority, enqueued_at=at)


def pop_all(leaf: Leaf, min_priority: int | None = None, aging: float = 0.0) -> list[str]:
    out = []
    while (got := leaf.take(min_priority, aging)) is not None:
        out.append(got.id)
    return out


def test_highest_priority_first_and_fifo_within_a_priority() -> None:
    leaf = Leaf("ingester")
    for rid, prio in [("a", 0), ("b", 2), ("c", 1), ("d", 2), ("e", 0)]:
        leaf.push(req(rid, prio))
    assert leaf.by_priority() == ((2, 2), (1, 1), (0, 2))
    assert pop_all(leaf) == ["b", "d", "c", "a", "e"]
    assert len(leaf) == 0 and leaf.by_priority() == ()


def test_push_front_goes_before_its_own_priority_only() -> None:
    leaf = Leaf("ingester")
    leaf.push(req("hi", 1))
    leaf.push(req("lo", 0))
    leaf.push_front(req("back", 0))
    assert pop_all(leaf) == ["hi", "back", "lo"]


def test_remove_from_the_middle_is_exact_at_once() -> None:
    leaf = Leaf("ingester")
    items = [req(str(i)) for i in range(5)]
    for item in items:
        leaf.push(item)
    leaf.remove(items[1])
    leaf.remove(items[2])
    assert len(leaf) == 3 and leaf.by_priority() == ((0, 3),)
    leaf.remove(items[0])  # the head: the dead ones behind it go too
    assert leaf.oldest_enqueued_at() == 0.0
    assert pop_all(leaf) == ["3", "4"]


def test_removing_the_last_live_request_of_a_priority_drops_it() -> None:
    leaf = Leaf("ingester")
    a, b = req("a", 1), req("b", 1)
    leaf.push(a)
    leaf.push(b)
    leaf.push(req("c", 0))
    leaf.remove(b)
    leaf.remove(a)
    assert leaf.by_priority() == ((0, 1),)
    assert pop_all(leaf) == ["c"]


def test_a_cancelled_request_pushed_again_is_served_once() -> None:
    leaf = Leaf("ingester")
    a, b = req("a"), req("b")
    leaf.push(a)
    leaf.push(b)
    leaf.remove(b)
    leaf.push(b)
    assert pop_all(leaf) == ["a", "b"]


def test_min_priority_hides_lower_priorities() -> None:
    leaf = Leaf("ingester")
    leaf.push(req("lo", 0))
    leaf.push(req("hi", 2))
    assert pop_all(leaf, min_priority=2) == ["hi"]
    assert leaf.take(1, 0.0) is None
    assert pop_all(leaf) == ["lo"]


def test_aging_ranks_by_priority_times_seconds_minus_enqueue_time() -> None:
    leaf = Leaf("ingester")
    leaf.push(req("old-lo", 0, at=0.0))
    leaf.push(req("new-hi", 1, at=15.0))
    leaf.push(req("newer-hi", 1, at=16.0))
    assert leaf.head_rank(None, 10.0) == 0.0
    assert pop_all(leaf, aging=10.0) == ["old-lo", "new-hi", "newer-hi"]


def test_aging_respects_the_min_priority() -> None:
    leaf = Leaf("ingester")
    leaf.push(req("old-lo", 0, at=0.0))
    leaf.push(req("new-hi", 1, at=15.0))
    assert leaf.best_priority(1, 10.0) == 1
    assert pop_all(leaf, min_priority=1, aging=10.0) == ["new-hi"]


def test_oldest_is_the_earliest_head() -> None:
    leaf = Leaf("ingester")
    leaf.push(req("a", 1, at=5.0))
    leaf.push(req("b", 0, at=2.0))
    assert leaf.oldest_enqueued_at() == 2.0
    assert [r.id for r in leaf.requests()] == ["a", "b"]


def test_a_second_priority_promotes_the_leaf_without_losing_order_or_cancels() -> None:
    leaf = Leaf("ingester")
    items = [req(str(i)) for i in range(4)]
    for item in items:
        leaf.push(item)
    leaf.remove(items[1])  # lazily dead inside the single deque
    leaf.push(req("hi", 2))
    assert leaf.by_priority() == ((2, 1), (0, 3)) and len(leaf) == 4
    assert pop_all(leaf) == ["hi", "0", "2", "3"]
    assert len(leaf) == 0 and leaf.by_priority() == ()


def test_plain_names_the_priority_exactly_while_a_bare_append_and_popleft_are_right() -> None:
    rng = random.Random(5)
    leaf = Leaf("ingester")
    live: list[Request] = []
    for step in range(3000):
        roll = rng.random()
        if roll < 0.45 or not live:
            item = req(f"r{step}", rng.choice([0, 0, 0, 1, 2]))
            (leaf.push_front if rng.random() < 0.1 else leaf.push)(item)
            live.append(item)
        elif roll < 0.7:
            victim = rng.choice(live)
            leaf.remove(victim)
            live.remove(victim)
        else:
            got = leaf.take(None, 0.0)
            assert got is not None
            live.remove(got)
        expected = leaf.prio if leaf.queues is None and leaf.dead is None else None
        assert leaf.plain == expected and len(leaf) == len(live)
        if leaf.plain is not None and live:
            # What the fast paths rely on: every request sits in the deque itself.
            assert sorted(r.id for r in leaf) == sorted(r.id for r in live)
