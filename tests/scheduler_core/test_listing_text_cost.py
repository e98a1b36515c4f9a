"""Scans whose predicate reads query text budget in text units (`TextCost`).

A queue of long queries (each 11 units: one plus one per 512 characters)
is read by `take_page` (bulk over one leaf, one by one over rounds of
tenants) and counted by `MatchScan`; the meter counts the units charged.
"""

from __future__ import annotations

from scheduler_core.listing_pages import TEXT_UNIT_CHARS, TextCost
from scheduler_core.model import QueueConfig, Request
from scheduler_core.queue_listing import MatchScan, take_page
from scheduler_core.runtime import SchedulerRuntime
from tests.fakes import FakeClock

LONG = "x" * (10 * TEXT_UNIT_CHARS)  # 11 units a request
UNITS = 11


def _runtime(per_tenant: int, tenants: tuple[str, ...] = ("acme",)) -> SchedulerRuntime:
    clock = FakeClock(100.0)
    runtime = SchedulerRuntime(QueueConfig(), clock=clock)
    for i in range(per_tenant):
        for tenant in tenants:
            query = f"{LONG} hit" if i % 10 == 9 else LONG
            runtime.enqueue(Request(id=f"{tenant}-{i}", tenant_id=tenant, query=query))
            clock.now += 0.001
    return runtime


def _hits(request: Request) -> bool:
    return request.query.endswith("hit")


def test_a_bulk_page_over_long_queries_stops_at_the_text_budget_and_says_it_did_not_finish() -> (
    None
):
    runtime = _runtime(100)
    listing = runtime.queue.listing().queued(tenant="acme")
    assert listing.chunk is not None  # one leaf: read in bulk
    cost = TextCost()
    rows, done = take_page(listing, 50, _hits, 10 * UNITS, cost)
    assert not done
    assert cost.charged == 10 * UNITS
    assert [r.id for r in rows] == ["acme-9"]


def test_a_page_read_one_by_one_stops_at_the_text_budget_too() -> None:
    runtime = _runtime(100, ("acme", "beta"))
    listing = runtime.queue.listing().queued()
    assert listing.chunk is None  # rounds over the tenants
    cost = TextCost()
    rows, done = take_page(listing, 50, _hits, 20 * UNITS, cost)
    assert not done
    assert cost.charged == 20 * UNITS
    assert [r.id for r in rows] == ["acme-9", "beta-9"]


def test_pages_cut_by_the_text_budget_resume_where_they_stopped_and_miss_nothing() -> None:
    # One tenant's leaf is read in bulk, two tenants' rounds one by one.
    for tenants, node in ((("acme",), "acme"), (("acme", "beta"), None)):
        runtime = _runtime(100, tenants)
        whole, _ = take_page(runtime.queue.listing().queued(tenant=node), 1000, _hits)
        position, seen, steps = None, [], 0
        while True:
            listing = runtime.queue.listing().queued(tenant=node, after=position)
            cost = TextCost()
            rows, done = take_page(listing, 1000, _hits, 7 * UNITS, cost)
            assert cost.charged <= 7 * UNITS
            seen += rows
            steps += 1
            if done:
                break
            position = listing.position()
        assert [r.id for r in seen] == [r.id for r in whole] and len(whole) == 10 * len(tenants)
        assert steps == -(-100 * len(tenants) // 7)


def test_a_page_that_fills_within_the_budget_stands_after_its_last_row() -> None:
    runtime = _runtime(100)
    listing = runtime.queue.listing().queued(tenant="acme")
    cost = TextCost()
    rows, done = take_page(listing, 2, _hits, 1000 * UNITS, cost)
    assert [r.id for r in rows] == ["acme-9", "acme-19"] and not done
    after = listing.position()
    rest, _ = take_page(runtime.queue.listing().queued(tenant="acme", after=after), 1, _hits)
    assert [r.id for r in rest] == ["acme-29"]


def test_a_count_over_long_queries_steps_within_the_text_budget_to_the_exact_count() -> None:
    runtime = _runtime(100, ("acme", "beta"))
    cost = TextCost()
    scan = MatchScan(runtime.queue.listing(), predicate=_hits, cost=cost)
    steps = 0
    while True:
        before = cost.charged
        finished = scan.step(30 * UNITS)
        # Charged when examined: at most one request past the step's budget.
        assert cost.charged - before <= 30 * UNITS
        steps += 1
        if finished:
            break
    assert scan.count == 20 and cost.charged == 200 * UNITS and steps == 7


def test_a_count_without_a_meter_still_counts_requests_not_text() -> None:
    runtime = _runtime(100, ("acme", "beta"))
    scan = MatchScan(runtime.queue.listing(), predicate=_hits)
    assert scan.step(200)
    assert scan.count == 20


def test_a_short_query_costs_one_unit_and_each_512_characters_one_more() -> None:
    def units(n: int) -> int:
        return TextCost.units(Request(id="r", tenant_id="t", query="q" * n))

    assert [units(0), units(511), units(512), units(5120)] == [1, 1, 2, 11]
