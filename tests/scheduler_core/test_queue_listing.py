"""The queue listing against the real queue's own dequeues.

Each example builds a queue by a random script (both layouts, both
component selections, aging on or off, sharded tenants, reservations,
priorities, cancels, front re-queues, layout switches), then checks:
every leaf lists exactly the order real dequeues then take it (queriers
of all kinds draining the whole queue); a node spanning several leaves
lists exactly what one fresh worker takes when that node is all the queue
holds; paging by cursor gives the same rows as one listing; counters,
`find` and the in-flight list agree with the listing; and cancelling by a
filter removes exactly the matching requests and nothing else. The
scripts and the readers live in listing_scripts.py.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.model import COMPONENTS, QueryPriority, QueueConfig, Request, TenantLimits
from scheduler_core.queue import RequestQueue
from scheduler_core.queue_listing import StaleCursor, take_page
from tests.fakes import FakeClock
from tests.scheduler_core.listing_scripts import (
    TENANTS,
    Built,
    built_queues,
    drain_all,
    leaves,
    listed,
    paged,
)


@settings(max_examples=150, deadline=None)
@given(built_queues())
def test_a_leaf_lists_exactly_the_order_its_dequeues_then_take(built: Built) -> None:
    q = built.q
    expected = {leaf: listed(q, tenant=leaf[0], component=leaf[1]) for leaf in leaves(q)}
    assert sorted(i for ids in expected.values() for i in ids) == sorted(built.queued)
    assert drain_all(built) == expected


NODES = st.one_of(
    st.tuples(st.sampled_from(TENANTS), st.none()),
    st.tuples(st.none(), st.sampled_from(COMPONENTS)),
    st.just((None, None)),
)


@settings(max_examples=150, deadline=None)
@given(built_queues(), NODES)
def test_a_node_of_several_leaves_lists_what_one_worker_takes_of_it_alone(
    built: Built, node: tuple[str | None, str | None]
) -> None:
    tenant, component = node
    q = built.q
    expected = listed(q, tenant=tenant, component=component)
    # The node is all the queue holds, and the worker may serve every tenant.
    for request in list(built.queued.values()):
        inside = (tenant is None or request.tenant_id == tenant) and (
            component is None or request.component == component
        )
        if not inside:
            q.cancel(request.id)
    for t in TENANTS:
        old = q.tenant_limits(t).query_priority
        unreserved = [replace(p, reserved_queriers=0) for p in old.priorities]
        q.set_tenant_limits(
            t, TenantLimits(query_priority=QueryPriority(old.enabled, 0, unreserved))
        )
    probe = "~probe"
    worker = q.connect_querier(probe)
    assert worker == 0
    taken: list[str] = []
    last = -1
    while True:
        got, last = q.dequeue(probe, worker, last)
        if got is None:
            break
        taken.append(got.id)
        q.complete(got.id)
    assert taken == expected
    assert len(q) == 0


@settings(max_examples=150, deadline=None)
@given(built_queues(), NODES, st.integers(1, 7), st.one_of(st.none(), st.integers(0, 3)))
def test_paging_by_cursor_gives_the_rows_of_one_listing_and_counters_agree(
    built: Built,
    node: tuple[str | None, str | None],
    size: int,
    priority: int | None,
) -> None:
    q = built.q
    tenant, component = node
    nodes = [(tenant, component)] + [(t, c) for t, c in leaves(q) if t == tenant or not tenant]
    for t, c in nodes:
        whole = [
            r.id
            for r in q.listing().queued(tenant=t, component=c)
            if priority is None or r.priority == priority
        ]
        pages = paged(q, size, tenant=t, component=c, priority=priority)
        exact = q.config.priority_aging_seconds == 0 or not built.requeued
        if exact:
            assert pages == whole
        else:  # an out-of-time-order FIFO under aging resumes approximately
            assert set(pages) <= set(whole) | set(built.queued)
        count = q.listing().queued_count(tenant=t, component=c, priority=priority)
        assert count == len(whole)
    for rid, request in built.queued.items():
        assert q.listing().find(rid) == (request, None)
    flights = q.listing().in_flight()
    assert {f.request.id for f in flights} == {r.id for r in built.running.values()}
    for f in flights:
        assert built.running[(f.querier_id, f.worker_id)] is f.request
        found = q.listing().find(f.request.id)
        assert found is not None and found[1] == f
    assert [f.since for f in flights] == sorted(f.since for f in flights)


@given(built_queues(), NODES, st.integers(1, 5), st.integers(1, 3))
def test_paging_with_a_filter_and_a_tiny_budget_lists_exactly_the_matches_in_order(
    built: Built, node: tuple[str | None, str | None], size: int, budget: int
) -> None:
    """Leaves and one-leaf tenants are read in bulk: a page stops at its last
    row and a budget stops a step anywhere, and resuming loses nothing."""
    q = built.q
    tenant, component = node

    def odd(r: Request) -> bool:
        return int(r.id.lstrip("r") or 0) % 2 == 1

    for t, c in [(tenant, component)] + leaves(q):
        whole = [r.id for r in q.listing().queued(tenant=t, component=c) if odd(r)]
        pages = paged(q, size, odd, budget, tenant=t, component=c)
        if q.config.priority_aging_seconds == 0 or not built.requeued:
            assert pages == whole


@settings(max_examples=150, deadline=None)
@given(
    built_queues(),
    NODES,
    st.one_of(st.none(), st.integers(0, 3)),
    st.sampled_from([None, "even", "odd"]),
)
def test_cancel_by_filter_cancels_exactly_the_matching_queued_requests(
    built: Built,
    node: tuple[str | None, str | None],
    priority: int | None,
    parity: str | None,
) -> None:
    q = built.q
    tenant, component = node

    def predicate(request: Request) -> bool:
        return parity is None or (int(request.id[1:]) % 2 == 0) == (parity == "even")

    matching = {
        rid
        for rid, r in built.queued.items()
        if (tenant is None or r.tenant_id == tenant)
        and (component is None or r.component == component)
        and (priority is None or r.priority == priority)
        and predicate(r)
    }
    before = len(q)
    running = {r.id for r in built.running.values()}
    cancelled = q.cancel_matching(
        tenant=tenant, component=component, priority=priority, predicate=predicate
    )
    assert sorted(r.id for r in cancelled) == sorted(matching)
    assert all(built.queued[r.id] is r for r in cancelled)
    assert len(q) == before - len(matching)
    rest = {r.id for t, c in leaves(q) for r in q.listing().queued(tenant=t, component=c)}
    assert rest == set(built.queued) - matching
    assert {f.request.id for f in q.listing().in_flight()} == running
    for key, request in built.running.items():
        assert q.in_flight_on(request.id, *key)


def test_a_page_deep_in_one_leaf_resumes_after_the_last_row_shown() -> None:
    clock = FakeClock(0.0)
    q = RequestQueue(QueueConfig(max_outstanding_requests_per_tenant=10_000), clock=clock)
    for i in range(5000):
        clock.now = float(i)
        q.enqueue(Request(id=f"r{i}", tenant_id="t", component="ingester"))
    listing = q.listing().queued(tenant="t", component="ingester")
    rows, done = take_page(listing, 50)
    assert [r.id for r in rows] == [f"r{i}" for i in range(50)] and not done
    cursor = listing.position()
    q.listing().queued(tenant="t", component="ingester")
    # Five dequeued meanwhile: the next page still starts after r49.
    q.connect_querier("q")
    for _ in range(5):
        got, _ = q.dequeue("q", 0)
        assert got is not None
        q.complete(got.id)
    resumed = q.listing().queued(tenant="t", component="ingester", after=cursor)
    rows, _ = take_page(resumed, 3)
    assert [r.id for r in rows] == ["r50", "r51", "r52"]
    # A cursor whose anchor left resumes at its time, by binary search.
    q.cancel("r52")
    later = q.listing().queued(tenant="t", component="ingester", after=resumed.position())
    assert [r.id for r in take_page(later, 2)[0]] == ["r53", "r54"]


def test_a_cursor_of_another_node_is_refused() -> None:
    q = RequestQueue(QueueConfig())
    q.enqueue(Request(id="r1", tenant_id="t", component="ingester"))
    listing = q.listing().queued(tenant="t", component="ingester")
    next(listing)
    with pytest.raises(StaleCursor):
        q.listing().queued(tenant="t", after=listing.position())
    with pytest.raises(StaleCursor):
        q.listing().queued(tenant="t", component="ingester", after=["leaf", [1, "x", 2]])


def test_with_aging_a_page_resumes_after_ties_that_went_to_the_higher_priority() -> None:
    clock = FakeClock(10.0)
    q = RequestQueue(QueueConfig(priority_aging_seconds=1.0), clock=clock)
    for rid, priority, at in (("a", 0, 10.0), ("b", 1, 11.0), ("c", 0, 12.0), ("d", 1, 13.0)):
        clock.now = at
        q.enqueue(Request(id=rid, tenant_id="t", component="ingester", priority=priority))
    # Ranks: b ties a (10 - 0 == 11 - 1) and wins as the higher priority; d ties c.
    assert paged(q, 1, tenant="t", component="ingester") == ["b", "a", "d", "c"]
    assert paged(q, 2, tenant="t", component="ingester") == ["b", "a", "d", "c"]
