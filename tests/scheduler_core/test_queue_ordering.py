"""Operation scripts with exact dequeue orders, for both layouts and selections."""

from __future__ import annotations

import random

import pytest

from scheduler_core.model import (
    BOTH,
    INGESTER,
    STORE_GATEWAY,
    UNKNOWN,
    PriorityDef,
    QueryPriority,
    Request,
    TenantLimits,
)
from scheduler_core.queue import RequestQueue
from scheduler_core.tenant_querier_assignment import shuffle_shard
from tests.fakes import clocked_queue


def enqueue(q: RequestQueue, *specs: tuple[str, str, str, int]) -> None:
    for rid, tenant, component, priority in specs:
        q.enqueue(Request(id=rid, tenant_id=tenant, component=component, priority=priority))


def serve_all(q: RequestQueue, querier: str, worker: int) -> list[str]:
    """Dequeue and complete until nothing is left for this worker."""
    order: list[str] = []
    last = -1
    while True:
        request, last = q.dequeue(querier, worker, last)
        if request is None:
            return order
        order.append(request.id)
        q.complete(request.id)


TWO_TENANTS = (
    ("a1", "a", INGESTER, 0),
    ("a2", "a", INGESTER, 0),
    ("a3", "a", STORE_GATEWAY, 0),
    ("b1", "b", INGESTER, 0),
    ("b2", "b", UNKNOWN, 0),
)


def test_tenant_first_alternates_tenants_and_round_robins_components() -> None:
    q, _ = clocked_queue(layout="tenant-first")
    enqueue(q, *TWO_TENANTS)
    worker = q.connect_querier("q1")
    assert serve_all(q, "q1", worker) == ["a1", "b1", "a3", "b2", "a2"]


def test_component_first_round_robin_visits_components_then_tenants() -> None:
    q, _ = clocked_queue(layout="component-first", component_selection="round-robin")
    enqueue(q, *TWO_TENANTS)
    worker = q.connect_querier("q1")
    assert serve_all(q, "q1", worker) == ["a1", "a3", "b2", "a2", "b1"]


def test_dequeue_returns_the_slot_of_the_served_tenant() -> None:
    q, _ = clocked_queue()
    enqueue(q, *TWO_TENANTS)
    worker = q.connect_querier("q1")
    assert q.dequeue("q1", worker, -1)[1] == 0
    q.complete("a1")
    assert q.dequeue("q1", worker, 0)[1] == 1


def test_querier_worker_priority_starts_each_worker_at_its_component() -> None:
    q, _ = clocked_queue(layout="component-first", component_selection="querier-worker-priority")
    enqueue(
        q,
        ("a1", "a", INGESTER, 0),
        ("a2", "a", STORE_GATEWAY, 0),
        ("a3", "a", BOTH, 0),
        ("a4", "a", UNKNOWN, 0),
        ("b1", "b", STORE_GATEWAY, 0),
    )
    workers = [q.connect_querier("q1") for _ in range(4)]
    assert workers == [0, 1, 2, 3]
    got, last = q.dequeue("q1", 1, -1)
    assert got is not None and got.id == "a2"
    q.complete("a2")
    got, last = q.dequeue("q1", 1, last)
    assert got is not None and got.id == "b1"
    q.complete("b1")
    # store-gateway is empty now: worker 1 moves on to the next component.
    got, last = q.dequeue("q1", 1, last)
    assert got is not None and got.id == "a3"
    assert [q.dequeue("q1", w, -1)[0].id for w in (0, 3)] == ["a1", "a4"]  # type: ignore[union-attr]


def test_querier_worker_priority_splits_workers_over_the_present_components_only() -> None:
    q, _ = clocked_queue(layout="component-first", component_selection="querier-worker-priority")
    enqueue(q, *[(f"{c[0]}{i}", "a", c, 0) for i in range(4) for c in (INGESTER, STORE_GATEWAY)])
    workers = [q.connect_querier("q1") for _ in range(4)]
    # Two components present: even workers prefer ingester, odd store-gateway
    # (with four fixed slots, workers 2 and 3 would both fall to ingester).
    taken = [q.dequeue("q1", w, -1)[0] for w in workers]
    assert [r.component if r else None for r in taken] == [
        INGESTER,
        STORE_GATEWAY,
        INGESTER,
        STORE_GATEWAY,
    ]


def test_an_emptied_component_leaves_the_root_and_workers_map_over_the_rest() -> None:
    q, _ = clocked_queue(layout="component-first", component_selection="querier-worker-priority")
    enqueue(
        q,
        ("i1", "a", INGESTER, 0),
        ("i2", "a", INGESTER, 0),
        ("s1", "a", STORE_GATEWAY, 0),
        ("b1", "a", BOTH, 0),
        ("b2", "a", BOTH, 0),
    )
    for _ in range(4):
        q.connect_querier("q1")
    got, _ = q.dequeue("q1", 1, -1)  # worker 1 of 3 components: store-gateway
    assert got is not None and got.id == "s1"
    q.complete("s1")
    assert list(q._tree.root.children) == [INGESTER, BOTH]
    # Two components now: worker 2 maps to 2 % 2 = 0, ingester. Had the empty
    # store-gateway node stayed, 2 % 3 would send it to ingester-and-store-gateway.
    got, _ = q.dequeue("q1", 2, -1)
    assert got is not None and got.id == "i1"
    got, _ = q.dequeue("q1", 3, -1)
    assert got is not None and got.id == "b1"


def test_querier_worker_priority_moves_on_when_preferred_work_is_outside_its_shard() -> None:
    q, _ = clocked_queue(layout="component-first", component_selection="querier-worker-priority")
    for querier in ("q1", "q2"):
        for _ in range(4):
            q.connect_querier(querier)
    q.set_tenant_limits("s", TenantLimits(max_queriers=1))
    shard = shuffle_shard("s", ["q1", "q2"], 1)
    assert shard is not None
    outsider = "q2" if shard == ("q1",) else "q1"
    enqueue(q, ("s1", "s", STORE_GATEWAY, 0), ("o1", "o", INGESTER, 0))
    # Worker 1 prefers store-gateway, which holds only tenant s (not ours).
    got, _ = q.dequeue(outsider, 1, -1)
    assert got is not None and got.id == "o1"
    assert q.dequeue(outsider, 2, -1) == (None, -1)
    got, _ = q.dequeue(shard[0], 1, -1)
    assert got is not None and got.id == "s1"


PRIORITY_SCRIPT = (
    ("x1", "p", INGESTER, 1),
    ("x2", "p", STORE_GATEWAY, 3),
    ("x3", "p", BOTH, 3),
    ("x4", "p", INGESTER, 3),
    ("x5", "p", UNKNOWN, 0),
)


def test_tenant_with_priority_serves_highest_head_first_with_ties_round_robin() -> None:
    q, _ = clocked_queue(layout="tenant-first")
    q.set_tenant_limits("p", TenantLimits(query_priority=QueryPriority(enabled=True)))
    enqueue(q, *PRIORITY_SCRIPT)
    worker = q.connect_querier("q1")
    assert serve_all(q, "q1", worker) == ["x4", "x2", "x3", "x1", "x5"]


def test_tenant_without_priority_round_robins_components() -> None:
    q, _ = clocked_queue(layout="tenant-first")
    enqueue(q, *PRIORITY_SCRIPT)
    worker = q.connect_querier("q1")
    assert serve_all(q, "q1", worker) == ["x4", "x2", "x3", "x5", "x1"]


def test_tenant_order_serves_a_new_tenant_before_repeating_one() -> None:
    q, _ = clocked_queue()
    enqueue(q, *[(f"{t}{i}", t, INGESTER, 0) for i in range(2) for t in "ab"])
    worker = q.connect_querier("q1")
    got, last = q.dequeue("q1", worker, -1)
    assert got is not None and got.id == "a0"
    q.complete("a0")
    enqueue(q, ("c0", "c", INGESTER, 0))
    order = [got.id]
    while True:
        got, last = q.dequeue("q1", worker, last)
        if got is None:
            break
        order.append(got.id)
        q.complete(got.id)
    assert order == ["a0", "b0", "c0", "a1", "b1"]


def test_a_reused_placeholder_never_makes_a_saved_index_skip_a_tenant() -> None:
    q, _ = clocked_queue()
    enqueue(q, ("a0", "a", INGESTER, 0), ("b0", "b", INGESTER, 0), ("c0", "c", INGESTER, 0))
    worker = q.connect_querier("q1")
    assert q.dequeue("q1", worker, 1)[0].id == "c0"  # type: ignore[union-attr]
    q.complete("c0")
    q.cancel("b0")
    enqueue(q, ("d0", "d", INGESTER, 0))  # takes b's old slot 1
    assert q.snapshot().total == 2
    got, last = q.dequeue("q1", worker, 2)  # wraps by comparison to slot 0
    assert got is not None and (got.id, last) == ("a0", 0)
    q.complete("a0")
    got, last = q.dequeue("q1", worker, last)
    assert got is not None and (got.id, last) == ("d0", 1)


def test_each_worker_keeps_its_own_place_in_the_tenant_order() -> None:
    q, _ = clocked_queue()
    enqueue(q, *[(f"{t}{i}", t, INGESTER, 0) for i in range(2) for t in "abc"])
    w0, w1 = q.connect_querier("q1"), q.connect_querier("q1")
    r0, last0 = q.dequeue("q1", w0, -1)
    r1, last1 = q.dequeue("q1", w1, 1)
    assert (r0 and r0.id, last0, r1 and r1.id, last1) == ("a0", 0, "c0", 2)


@pytest.mark.parametrize("selection", ["round-robin", "querier-worker-priority"])
def test_switching_layout_midway_keeps_every_leaf_in_order(selection: str) -> None:
    q, _ = clocked_queue(component_selection=selection)
    specs = [
        (f"{t}-{c[:3]}-{i}", t, c, i % 2)
        for i in range(4)
        for t in "ab"
        for c in (INGESTER, STORE_GATEWAY, UNKNOWN)
    ]
    enqueue(q, *specs)
    worker = q.connect_querier("q1")
    served: list[Request] = []
    last = -1
    for step in range(len(specs)):
        if step % 5 == 2:
            q.set_layout("component-first" if step % 2 else "tenant-first")
        got, last = q.dequeue("q1", worker, last)
        assert got is not None
        served.append(got)
        q.complete(got.id)
    assert len(q) == 0 and len(served) == len(specs)
    for tenant in "ab":
        for component in (INGESTER, STORE_GATEWAY, UNKNOWN):
            ids = [r.id for r in served if (r.tenant_id, r.component) == (tenant, component)]
            expected = [s[0] for s in specs if (s[1], s[2]) == (tenant, component)]
            assert ids == sorted(expected, key=lambda rid: (-(int(rid[-1]) % 2), int(rid[-1])))


def tenant(rng: random.Random) -> str:
    """Mostly unsharded tenants; the sharded one (t7) rarely, so both paths run."""
    name = f"t{rng.randrange(10)}"
    return name if name != "t7" or rng.random() < 0.1 else "t8"


@pytest.mark.parametrize(
    ("layout", "selection"),
    [("tenant-first", "round-robin"), ("component-first", "querier-worker-priority")],
)
def test_the_fused_fast_path_serves_exactly_what_the_generic_walk_serves(
    layout: str, selection: str
) -> None:
    rng = random.Random(17)
    config = {"layout": layout, "component_selection": selection}
    fused, _ = clocked_queue(**config, max_outstanding_requests_per_tenant=10**6)
    generic, _ = clocked_queue(**config, max_outstanding_requests_per_tenant=10**6)
    generic._fast = 0  # the generic tree walk only
    reserving = TenantLimits(
        max_queriers=2,
        query_priority=QueryPriority(
            enabled=True, priorities=(PriorityDef(priority=2, reserved_queriers=1),)
        ),
    )
    for q in (fused, generic):
        for name in ("q0", "q1", "q2"):
            for _ in range(4):
                q.connect_querier(name)
        q.set_tenant_limits("t7", reserving)  # a sharded tenant with a reserved querier
    busy: dict[tuple[str, int], str] = {}
    last: dict[tuple[str, int], int] = {}
    for step in range(4000):
        if rng.random() < 0.3:
            # Mostly one component and one priority per tenant, so tenants
            # keep passing between one plain leaf (fused) and more (generic).
            name = tenant(rng)
            home = (INGESTER, STORE_GATEWAY, BOTH)[int(name[1:]) % 3]
            component = home if rng.random() < 0.8 else rng.choice([INGESTER, STORE_GATEWAY, BOTH])
            spec = (f"r{step}", name, component, 2 if rng.random() < 0.05 else 0)
            enqueue(fused, spec)
            enqueue(generic, spec)
            continue
        key = (f"q{rng.randrange(3)}", rng.randrange(4))
        if key in busy:
            rid = busy.pop(key)
            assert fused.complete(rid) is not None and generic.complete(rid) is not None
            continue
        got_f, index_f = fused.dequeue(*key, last.get(key, -1))
        got_g, index_g = generic.dequeue(*key, last.get(key, -1))
        assert (got_f and got_f.id, index_f) == (got_g and got_g.id, index_g)
        if got_f is not None:
            busy[key], last[key] = got_f.id, index_f
    assert fused.snapshot().leaves == generic.snapshot().leaves
