"""A REST listing whose search or regex reads long queries steps by text units.

Each step of a page (`take_page`) is recorded with what it charged; a
step holds the loop about as long whatever the query sizes, so long
queries take more steps, each within `PAGE_BUDGET` units, and the rows and
total are the same as one unbounded pass finds.
"""

from __future__ import annotations

from typing import Any

import pytest

from api.wire import queue_requests
from api.wire.queue_requests import PAGE_BUDGET, list_page
from api.wire.queue_rows import RequestFilter
from scheduler_core.listing_pages import TEXT_UNIT_CHARS, TextCost
from scheduler_core.model import QueueConfig, Request
from scheduler_core.queue_listing import take_page
from scheduler_core.runtime import SchedulerRuntime
from tests.fakes import FakeClock

UNITS = 101  # a request of 100 * TEXT_UNIT_CHARS characters


@pytest.fixture
def runtime() -> SchedulerRuntime:
    clock = FakeClock(100.0)
    runtime = SchedulerRuntime(QueueConfig(), clock=clock)
    for i in range(100):
        query = "x" * (100 * TEXT_UNIT_CHARS) + (" hit7" if i % 10 == 7 else "")
        runtime.enqueue(Request(id=f"r{i}", tenant_id="acme", query=query))
        clock.now += 0.001
    return runtime


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bool]]:
    """(units charged, whether it had a meter) of every step a listing takes."""
    seen: list[tuple[int, bool]] = []

    def recorded(listing: Any, limit: int, predicate: Any, budget: Any, cost: Any = None) -> Any:
        before = cost.charged if cost is not None else 0
        out = take_page(listing, limit, predicate, budget, cost)
        seen.append(((cost.charged if cost is not None else 0) - before, cost is not None))
        return out

    monkeypatch.setattr(queue_requests, "take_page", recorded)
    return seen


@pytest.mark.parametrize("fields", [{"regex": r"hit\d"}, {"search": "HIT7"}])
async def test_a_listing_over_long_queries_takes_more_steps_each_within_the_budget(
    runtime: SchedulerRuntime, steps: list[tuple[int, bool]], fields: dict[str, str]
) -> None:
    flt = RequestFilter.parse({"tenant": "acme", **fields})
    page = await list_page(runtime, flt, cursor=None, limit=20, replica="r1", names={})
    assert [row["id"] for row in page.rows] == [f"r{i}" for i in range(7, 100, 10)]
    assert page.total == 10 and page.next is None
    # 100 requests of 101 units: 10,100 units in steps of PAGE_BUDGET (2,000),
    # each passing it by one request at most.
    assert len(steps) == -(-100 // -(-PAGE_BUDGET // UNITS))
    assert all(metered and charged <= PAGE_BUDGET + UNITS for charged, metered in steps)
    assert sum(charged for charged, _ in steps) == 100 * UNITS


async def test_a_listing_over_long_queries_pages_by_cursor_to_the_same_rows(
    runtime: SchedulerRuntime, steps: list[tuple[int, bool]]
) -> None:
    flt = RequestFilter.parse({"tenant": "acme", "regex": "hit"})
    ids: list[str] = []
    cursor = None
    while True:
        page = await list_page(runtime, flt, cursor=cursor, limit=3, replica="r1", names={})
        ids += [row["id"] for row in page.rows]
        assert page.total == 10
        if page.next is None:
            break
        cursor = page.next
    assert ids == [f"r{i}" for i in range(7, 100, 10)]
    assert all(charged <= PAGE_BUDGET + UNITS for charged, _ in steps)


async def test_a_listing_that_reads_no_text_steps_by_requests_as_before(
    runtime: SchedulerRuntime, steps: list[tuple[int, bool]]
) -> None:
    runtime.clock.now += 10.0  # type: ignore[attr-defined]
    flt = RequestFilter.parse({"tenant": "acme", "min_wait": 10.0505})
    page = await list_page(runtime, flt, cursor=None, limit=500, replica="r1", names={})
    assert len(page.rows) == 50 and page.total == 50  # r0 .. r49
    assert steps == [(0, False)]
    assert flt.text_cost() is None and isinstance(RequestFilter(search="a").text_cost(), TextCost)
