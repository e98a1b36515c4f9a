"""A drill page's queued scan within its budgets: text units shared by a tick's drills.

Real runtimes on a fake clock, long queries (each `UNITS` text units), and
pages built by hand (`build_page`) or by a broadcaster's tick; what a page
cost is read from the tick's `DrillBudget`, never from a clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dashboard.drill import (
    TICK_TEXT_BUDGET,
    DrillBudget,
    DrillParams,
    DrillState,
    build_page,
)
from dashboard.live import Broadcaster, Viewer
from scheduler_core.listing_pages import TEXT_UNIT_CHARS
from scheduler_core.model import QueueConfig, Request
from scheduler_core.runtime import SchedulerRuntime
from scheduler_core.snapshot import QueueSnapshot
from tests.fakes import FakeClock

UNITS = 11  # a request of 10 * TEXT_UNIT_CHARS characters


def _runtime(tenants: int, per_tenant: int = 100, size: int = 10 * TEXT_UNIT_CHARS) -> Any:
    clock = FakeClock(100.0)
    runtime = SchedulerRuntime(QueueConfig(), clock=clock)
    for t in range(tenants):
        for i in range(per_tenant):
            query = "x" * size + (" hit" if i % 10 == 9 else "")
            runtime.enqueue(Request(id=f"t{t}-{i}", tenant_id=f"t{t}", query=query))
            clock.now += 0.001
    return runtime


def _drill(**fields: Any) -> DrillParams:
    return DrillParams.from_message(fields)


def _spent(runtime: Any, params: DrillParams, budget: DrillBudget) -> tuple[int, dict[str, Any]]:
    before = budget.left
    page = build_page(runtime, params, {}, "r", budget)
    return before - budget.left, page


def test_the_distinct_drills_of_a_tick_share_its_budget_each_an_equal_share_at_least() -> None:
    runtime = _runtime(4)  # 4,400 units queued
    drills = [_drill(regex=f"nomatch{i}") for i in range(4)]
    budget = DrillBudget.for_drills([*drills, drills[0]], units=880)
    spent = []
    for params in drills:
        cost, page = _spent(runtime, params, budget)
        spent.append(cost)
        assert page["exact"] is False and page["total"] == 0 and page["rows"] == []
    # Each a quarter at least; charged as examined, a scan passes its share
    # by one request at most (the page's rows, then its count).
    assert all(880 // 4 <= cost <= 880 // 4 + 2 * UNITS for cost in spent)
    assert sum(spent) <= 880 + 2 * UNITS and budget.left == 0


def test_a_drill_past_the_tick_s_budget_says_at_least_its_rows_and_the_next_tick_serves_it() -> (
    None
):
    runtime = _runtime(2)
    params = _drill(search="HIT")
    spent = DrillBudget(units=500, pages=1)
    first = build_page(runtime, params, {}, "r", DrillBudget(units=0))
    assert first["exact"] is False and first["rows"] == [] and first["total"] == 0
    cost, page = _spent(runtime, params, spent)
    assert page["exact"] is False and cost <= 500 + 2 * UNITS
    # 500 units read 46 requests (rounds: t0-0, t1-0, ... t1-22) for the rows:
    # four hits; the count has nothing left and says at least those.
    assert [key for key, _ in page["rows"]] == ["r/t0-9", "r/t1-9", "r/t0-19", "r/t1-19"]
    assert page["total"] == 4
    whole = build_page(runtime, params, {}, "r", DrillBudget(units=10 * 200 * UNITS))
    assert whole["exact"] is True and whole["total"] == 20


def test_a_drill_that_reads_no_text_is_built_as_before_and_spends_none_of_the_budget() -> None:
    runtime = _runtime(3)
    runtime.clock.now += 60.0
    for fields in ({}, {"tenant": "t1"}, {"min_wait": 60.05}, {"actor": "users"}):
        params = _drill(**fields, limit=20)
        budget = DrillBudget(units=0)
        assert build_page(runtime, params, {}, "r", budget) == build_page(runtime, params, {}, "r")
        assert budget.left == 0
        assert DrillBudget.for_drills([params], units=7).share() == 7  # no text drill due


def test_a_tick_builds_its_drill_pages_from_one_budget_of_the_drills_its_viewers_have_open() -> (
    None
):
    source = _Source(_runtime(2, size=100 * TEXT_UNIT_CHARS))  # 101 units a request
    broadcaster = Broadcaster(source, autostart=False)
    drills = [_drill(regex="nomatch"), _drill(search="nomatch"), _drill(tenant="t0")]
    for params in [*drills, drills[0]]:
        viewer = Viewer(_never_sent)
        viewer.subscribed = True
        viewer.set_drill(DrillState(params))
        broadcaster.viewers.add(viewer)
    tick = broadcaster.latest()
    assert tick is not None
    pages = [tick.drill_page(params) for params in drills]
    assert len(source.budgets) == 1 and source.budgets[0][0] is not None
    spent = source.spent
    # Two text drills share the tick's budget (a scan passes its share by one
    # request at most, taken from the next page's); the tenant drill reads no text.
    assert all(cost >= TICK_TEXT_BUDGET // 2 - 2 * 101 for cost in spent[:2])
    assert sum(spent) <= TICK_TEXT_BUDGET + 4 * 101 and spent[2] == 0
    assert pages[0]["exact"] is False and pages[2]["exact"] is True


class _Source:
    """The runtime, read the way the runtime host is, recording what each page spent."""

    def __init__(self, runtime: SchedulerRuntime) -> None:
        self.runtime = runtime
        self.budgets: list[tuple[DrillBudget | None]] = []
        self.spent: list[int] = []

    def snapshot(self) -> QueueSnapshot:
        return self.runtime.snapshot()

    def stats(self) -> Mapping[str, Any] | None:
        return None

    def drill_page(self, params: DrillParams, budget: DrillBudget) -> Any:
        if not any(b[0] is budget for b in self.budgets):
            self.budgets.append((budget,))
        before = budget.left
        page = build_page(self.runtime, params, {}, "r", budget)
        self.spent.append(before - budget.left)
        return page


async def _never_sent(text: str) -> None:
    raise AssertionError("no frame is sent here")
