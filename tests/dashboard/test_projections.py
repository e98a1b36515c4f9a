"""Inspector projections over real queue snapshots, on a fake clock."""

from __future__ import annotations

import random
from typing import Any

import pytest

from dashboard.projections import (
    InvalidViewParams,
    SnapshotIndex,
    ViewParams,
    build_header,
    build_tree,
)
from dashboard.querier_view import RESERVED_IDLE_AFTER
from dashboard.wire import tree_from_wire, tree_to_wire
from scheduler_core.model import (
    BOTH,
    COMPONENTS,
    INGESTER,
    STORE_GATEWAY,
    UNKNOWN,
    PriorityDef,
    QueryAttribute,
    QueryPriority,
    Request,
    TenantLimits,
)
from scheduler_core.queue import RequestQueue
from tests.fakes import FakeClock, clocked_queue


@pytest.fixture
def clocked() -> tuple[RequestQueue, FakeClock]:
    return clocked_queue(1000.0, max_outstanding_requests_per_tenant=10_000)


@pytest.fixture
def clock(clocked: tuple[RequestQueue, FakeClock]) -> FakeClock:
    return clocked[1]


@pytest.fixture
def queue(clocked: tuple[RequestQueue, FakeClock]) -> RequestQueue:
    return clocked[0]


def enqueue(q: RequestQueue, rid: str, tenant: str, component: str, priority: int = 0) -> None:
    q.enqueue(Request(id=rid, tenant_id=tenant, component=component, priority=priority))


def index_of(q: RequestQueue) -> SnapshotIndex:
    return SnapshotIndex.build(q.snapshot())


def names(nodes: list[dict[str, Any]]) -> list[str]:
    return [n["name"] for n in nodes]


def test_tenant_first_orders_tenants_by_depth_and_splits_by_priority(
    queue: RequestQueue, clock: FakeClock
) -> None:
    enqueue(queue, "a1", "a", INGESTER, 3)
    clock.now += 5
    for i in range(3):
        enqueue(queue, f"b{i}", "b", STORE_GATEWAY, i % 2)
    clock.now += 5
    tree = build_tree(index_of(queue), ViewParams())
    assert names(tree["nodes"]) == ["b", "a"]
    b = tree["nodes"][0]
    assert b["length"] == 3
    assert b["by_priority"] == [[1, 1], [0, 2]]
    assert b["oldest_wait"] == 5.0
    assert tree["nodes"][1]["oldest_wait"] == 10.0


def test_children_are_sent_only_for_expanded_nodes(queue: RequestQueue) -> None:
    enqueue(queue, "a1", "a", INGESTER)
    enqueue(queue, "a2", "a", BOTH)
    collapsed = build_tree(index_of(queue), ViewParams())["nodes"][0]
    assert collapsed["children"] == [] and collapsed["fanout"] == 2
    opened = build_tree(index_of(queue), ViewParams(expanded=frozenset({"t:a"})))["nodes"][0]
    assert [(c["name"], c["length"]) for c in opened["children"]] == [(INGESTER, 1), (BOTH, 1)]


def test_component_first_projects_the_same_leaves_component_then_tenant(
    queue: RequestQueue,
) -> None:
    enqueue(queue, "a1", "a", INGESTER)
    enqueue(queue, "b1", "b", INGESTER)
    enqueue(queue, "b2", "b", INGESTER)
    enqueue(queue, "b3", "b", STORE_GATEWAY)
    params = ViewParams("component-first", expanded=frozenset(f"c:{c}" for c in COMPONENTS))
    tree = build_tree(index_of(queue), params)
    assert names(tree["nodes"]) == [INGESTER, STORE_GATEWAY, BOTH]
    ingester = tree["nodes"][0]
    assert ingester["length"] == 3 and ingester["fanout"] == 2
    assert [(c["name"], c["length"]) for c in ingester["children"]] == [("b", 2), ("a", 1)]
    assert ingester["children"][0]["key"] == "c:ingester/b"
    assert tree["nodes"][2]["length"] == 0


def test_component_first_lists_every_real_component_and_unknown_only_while_it_holds_work(
    queue: RequestQueue,
) -> None:
    params = ViewParams("component-first")
    empty = build_tree(index_of(queue), params)["nodes"]
    assert [(n["name"], n["length"]) for n in empty] == [
        (INGESTER, 0),
        (STORE_GATEWAY, 0),
        (BOTH, 0),
    ]
    enqueue(queue, "u1", "a", UNKNOWN)
    enqueue(queue, "i1", "b", INGESTER)
    held = build_tree(index_of(queue), params)
    assert [(n["name"], n["length"]) for n in held["nodes"]] == [
        (INGESTER, 1),
        (STORE_GATEWAY, 0),
        (BOTH, 0),
        (UNKNOWN, 1),
    ]
    # A search that matches none of its tenants still shows it, at 0, as it
    # shows the real components: the row says where requests wait.
    searched = build_tree(index_of(queue), ViewParams("component-first", search="b"))["nodes"]
    assert [(n["name"], n["length"]) for n in searched][3] == (UNKNOWN, 0)
    queue.cancel("u1")
    assert names(build_tree(index_of(queue), params)["nodes"]) == [INGESTER, STORE_GATEWAY, BOTH]


def test_top_tenants_with_an_others_row_summing_the_rest(queue: RequestQueue) -> None:
    rnd = random.Random(7)
    total = 0
    for t in range(120):
        for i in range(rnd.randrange(1, 6)):
            enqueue(
                queue, f"{t}-{i}", f"tenant-{t:03d}", rnd.choice(COMPONENTS), rnd.choice([0, 2])
            )
            total += 1
    tree = build_tree(index_of(queue), ViewParams(page_size=50))
    nodes = tree["nodes"]
    assert len(nodes) == 51
    others = nodes[-1]
    assert others["kind"] == "others" and others["count"] == 70
    assert sum(n["length"] for n in nodes) == total
    assert sum(c for _, c in others["by_priority"]) == others["length"]
    lengths = [n["length"] for n in nodes[:-1]]
    assert lengths == sorted(lengths, reverse=True)
    assert tree["pages"] == 3


def test_pages_walk_the_depth_order_without_overlap(queue: RequestQueue) -> None:
    for t in range(25):
        for i in range(t + 1):
            enqueue(queue, f"{t}-{i}", f"t{t:02d}", INGESTER)
    index = index_of(queue)
    seen: list[str] = []
    for page in range(3):
        nodes = build_tree(index, ViewParams(page=page, page_size=10))["nodes"]
        seen += [n["name"] for n in nodes if n["kind"] == "tenant"]
    assert seen == [f"t{t:02d}" for t in range(24, -1, -1)]


def test_a_page_past_the_end_shows_the_last_page_in_both_projections(
    queue: RequestQueue,
) -> None:
    for t in range(25):
        enqueue(queue, f"r{t}", f"t{t:02d}", INGESTER)
    index = index_of(queue)
    last = build_tree(index, ViewParams(page=2, page_size=10))
    past = build_tree(index, ViewParams(page=7, page_size=10))
    assert (past["page"], past["pages"]) == (2, 3)
    assert past["nodes"] == last["nodes"]
    expanded = frozenset({"c:ingester"})
    by_component = build_tree(index, ViewParams("component-first", 0, 7, 10, expanded))
    assert (by_component["page"], by_component["pages"]) == (2, 3)
    assert len(by_component["nodes"][0]["children"]) == 5 + 1  # the last five, then others


def test_search_filters_tenants_case_insensitively_in_both_projections(
    queue: RequestQueue,
) -> None:
    enqueue(queue, "1", "Team-Alpha", INGESTER)
    enqueue(queue, "2", "team-beta", INGESTER)
    enqueue(queue, "3", "other", STORE_GATEWAY)
    index = index_of(queue)
    assert names(build_tree(index, ViewParams(search="TEAM"))["nodes"]) == [
        "Team-Alpha",
        "team-beta",
    ]
    params = ViewParams("component-first", search="team", expanded=frozenset({"c:store-gateway"}))
    store = build_tree(index, params)["nodes"][1]
    assert store["length"] == 0 and store["children"] == []


def test_header_counts_queued_work_queriers_and_reserved_idle(
    queue: RequestQueue, clock: FakeClock
) -> None:
    limits = TenantLimits(
        query_priority=QueryPriority(True, 0, [PriorityDef(5, 1, [QueryAttribute(regex="x")])])
    )
    queue.set_tenant_limits("gold", limits)
    for _ in range(4):
        queue.connect_querier("q-1")
        queue.connect_querier("q-2")
    enqueue(queue, "r1", "plain", INGESTER)
    clock.now += RESERVED_IDLE_AFTER
    header = build_header(index_of(queue), {"frontends": 2})
    assert header["total"] == 1 and header["tenants_queued"] == 1
    assert header["queriers"] == 2 and header["workers_total"] == 8
    assert header["reserved_idle"] == 1
    assert header["stats"] == {"frontends": 2}


@pytest.mark.parametrize(
    "raw",
    [
        {"projection": "sideways"},
        {"page": -1},
        {"page_size": 0},
        {"page_size": 10_000},
        {"search": 5},
        {"expanded": "t:a"},
        {"page": True},
    ],
)
def test_bad_view_params_are_refused(raw: dict[str, Any]) -> None:
    with pytest.raises(InvalidViewParams):
        ViewParams.from_message(raw)


def test_view_params_are_hashable_so_equal_views_share_a_cache_entry() -> None:
    a = ViewParams.from_message({"projection": "component-first", "expanded": ["c:x", "c:y"]})
    b = ViewParams.from_message({"expanded": ["c:y", "c:x"], "projection": "component-first"})
    assert a == b and hash(a) == hash(b)


def test_wire_form_round_trips_every_node_and_key(queue: RequestQueue) -> None:
    for t in range(8):
        enqueue(queue, f"{t}a", f"t{t}", INGESTER, t % 3)
        enqueue(queue, f"{t}b", f"t{t}", STORE_GATEWAY)
    index = index_of(queue)
    for params in (
        ViewParams(page_size=3, expanded=frozenset({"t:t0", "t:t1"})),
        ViewParams("component-first", page_size=3, expanded=frozenset({"c:ingester"})),
    ):
        tree = build_tree(index, params)
        assert tree_from_wire(tree_to_wire(tree)) == tree


def _brute_others(q: RequestQueue, shown: set[str], component: str | None) -> tuple[Any, ...]:
    snap = q.snapshot()
    leaves = [
        leaf
        for leaf in snap.leaves
        if leaf.length and leaf.tenant_id not in shown
        if component is None or leaf.component == component
    ]
    counts: dict[int, int] = {}
    for leaf in leaves:
        for p, c in leaf.by_priority:
            counts[p] = counts.get(p, 0) + c
    oldest = min(leaf.oldest_enqueued_at for leaf in leaves)
    by_priority = [list(pc) for pc in sorted(counts.items(), reverse=True)]
    return sum(leaf.length for leaf in leaves), by_priority, round(snap.taken_at - oldest, 1)


@pytest.mark.parametrize("seed", range(6))
def test_others_row_equals_a_merge_of_every_tenant_off_the_page(
    queue: RequestQueue, clock: FakeClock, seed: int
) -> None:
    rng = random.Random(seed)
    for i in range(300):
        clock.now += rng.random()
        tenant = f"t{rng.randrange(40):02d}"
        enqueue(queue, f"r{i}", tenant, rng.choice(COMPONENTS), rng.randrange(4))
    index = index_of(queue)
    for page in (0, 1, 3):
        tree = build_tree(index, ViewParams(page=page, page_size=7))
        shown = {n["name"] for n in tree["nodes"] if n["kind"] == "tenant"}
        others = tree["nodes"][-1]
        expected = _brute_others(queue, shown, None)
        assert (others["length"], others["by_priority"], others["oldest_wait"]) == expected
        expanded = frozenset(f"c:{c}" for c in COMPONENTS)
        params = ViewParams("component-first", page=page, page_size=5, expanded=expanded)
        for component_node in build_tree(index, params)["nodes"]:
            children = component_node["children"]
            shown = {n["name"] for n in children if n["kind"] == "tenant"}
            got = children[-1]
            expected = _brute_others(queue, shown, component_node["name"])
            assert (got["length"], got["by_priority"], got["oldest_wait"]) == expected
