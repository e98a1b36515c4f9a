"""A text drill's count kept from tick to tick (`DrillCounts`): it converges to the exact count.

Real runtimes on a fake clock, long queries (each `UNITS` text units), and
ticks stood for by one `DrillBudget` each, sharing the counts the way a
broadcaster's ticks do; what is counted is read from pages, never a clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dashboard.drill import DrillBudget, DrillCounts, DrillParams, DrillState, build_page
from dashboard.live import Broadcaster, Viewer
from scheduler_core.listing_pages import TEXT_UNIT_CHARS
from scheduler_core.model import QueueConfig, Request
from scheduler_core.runtime import SchedulerRuntime
from scheduler_core.snapshot import QueueSnapshot
from tests.fakes import FakeClock

UNITS = 11  # a request of 10 * TEXT_UNIT_CHARS characters
SHARE = 600  # a tick's units here: the rows take 5 requests, the count ~49


def _runtime(tenants: int = 2, per_tenant: int = 100) -> Any:
    clock = FakeClock(100.0)
    runtime = SchedulerRuntime(QueueConfig(), clock=clock)
    for t in range(tenants):
        for i in range(per_tenant):
            _enqueue(runtime, f"t{t}-{i}", f"t{t}")
    return runtime


def _enqueue(runtime: Any, rid: str, tenant: str, tail: str = "") -> None:
    query = "x" * (10 * TEXT_UNIT_CHARS) + tail
    runtime.enqueue(Request(id=rid, tenant_id=tenant, query=query))
    runtime.clock.now += 0.001


def _drill(**fields: Any) -> DrillParams:
    return DrillParams.from_message({"limit": 5, **fields})


def _ticks(runtime: Any, params: DrillParams, counts: DrillCounts, n: int) -> list[dict[str, Any]]:
    pages = []
    for _ in range(n):
        pages.append(build_page(runtime, params, {}, "r", DrillBudget(SHARE, 1, counts)))
        runtime.clock.now += 0.25
    return pages


def test_a_count_needing_several_shares_says_at_least_then_the_exact_count_once_it_finished() -> (
    None
):
    runtime = _runtime()  # 200 matches, 2,200 units: about five ticks' shares
    params = _drill(search="X")
    counts = DrillCounts()
    pages = _ticks(runtime, params, counts, 10)
    first = next(i for i, page in enumerate(pages) if page["exact"])
    assert 3 <= first <= 5
    for page in pages[:first]:  # "at least" what the count met so far, growing
        assert page["total"] < 200 and "counted_at" not in page
    assert [p["total"] for p in pages[:first]] == sorted(p["total"] for p in pages[:first])
    # Then the count, exact, with when it finished, while the next scan runs
    # (as many ticks again: it finishes on the tick after those).
    finished = pages[first]["counted_at"]
    for page in pages[first:]:
        assert page["exact"] is True and page["total"] == 200 and len(page["rows"]) == 5
    assert [p["counted_at"] for p in pages[first : 2 * first + 1]] == [finished] * (first + 1)
    assert pages[2 * first + 1]["counted_at"] > finished
    # Each tick still spent its share, passing it by one request's units at most.
    budget = DrillBudget(SHARE, 1, counts)
    build_page(runtime, params, {}, "r", budget)
    assert budget.left == 0 and SHARE - budget.left <= SHARE


def test_a_queue_change_between_ticks_is_counted_by_the_next_scan_that_finishes() -> None:
    runtime = _runtime()
    params = _drill(search="X")
    counts = DrillCounts()
    pages = _ticks(runtime, params, counts, 6)
    assert pages[-1]["exact"] is True and pages[-1]["total"] == 200
    finished = pages[-1]["counted_at"]
    for i in range(10):
        assert runtime.cancel(f"t1-{50 + i}") is not None
    _enqueue(runtime, "late-1", "t1")
    _enqueue(runtime, "late-2", "t2")  # a tenant new since the last scan began
    later = _ticks(runtime, params, counts, 12)
    instants = sorted({page["counted_at"] for page in later})
    fresh = next(i for i, page in enumerate(later) if page["counted_at"] != finished)
    # Until the next scan finishes, the last count and its instant, as they were.
    assert all(page["total"] == 200 for page in later[:fresh])
    # The scan under way when the queue changed had not read t1 yet: its
    # cancelled requests are not counted, its new one is; t2 came after
    # the scan took its tenants, so the scan after it counts that one too.
    assert later[fresh]["exact"] is True and later[fresh]["total"] == 191
    assert instants[0] == finished < later[fresh]["counted_at"] == instants[1]
    last = next(page for page in later if page["counted_at"] == instants[2])
    assert last["exact"] is True and last["total"] == 192


def test_a_rare_match_s_count_moves_on_with_the_quarter_of_the_share_the_rows_leave_it() -> None:
    runtime = _runtime(tenants=0)
    for i in range(300):  # 3,300 units, a hit every 50 requests
        _enqueue(runtime, f"t0-{i}", f"t{i % 3}", " hit" if i % 50 == 9 else "")
    pages = _ticks(runtime, _drill(search="HIT"), DrillCounts(), 30)
    # The rows' scan never reaches past its three quarters of a share, so
    # the page is never exact; its count reaches every hit all the same.
    assert all(page["exact"] is False for page in pages)
    assert [key for key, _ in pages[-1]["rows"]] == ["r/t0-9"]
    assert pages[0]["total"] == 1 and pages[-1]["total"] == 6
    assert "counted_at" in pages[-1]


def test_a_page_that_walks_its_whole_node_is_exact_at_once_and_its_count_is_kept() -> None:
    runtime = _runtime(tenants=1, per_tenant=20)  # 220 units: within one share
    params = _drill(search="X", limit=50)
    counts = DrillCounts()
    page = _ticks(runtime, params, counts, 1)[0]
    assert page["exact"] is True and page["total"] == 20 and "counted_at" not in page
    assert len(counts) == 1


def test_a_drill_closed_on_every_viewer_drops_its_kept_count() -> None:
    source = _Source(_runtime())
    broadcaster = Broadcaster(source, autostart=False)
    text, other = _drill(search="X"), _drill(regex="x+")
    viewers = [_viewer(broadcaster, params) for params in (text, text, other)]

    def tick() -> None:
        current = broadcaster.latest()
        assert current is not None
        for params in (text, other):
            current.drill_page(params)

    tick()
    assert len(broadcaster.drill_counts) == 2
    viewers[0].set_drill(None)
    tick()  # the other viewer of the search still has it open
    assert len(broadcaster.drill_counts) == 2
    viewers[1].set_drill(None)
    viewers[2].paused = True
    broadcaster.latest()
    assert len(broadcaster.drill_counts) == 0


def test_a_drill_that_reads_no_text_keeps_no_count_and_is_built_as_before() -> None:
    runtime = _runtime(tenants=3)
    runtime.clock.now += 60.0
    counts = DrillCounts()
    for fields in ({}, {"tenant": "t1"}, {"min_wait": 60.05}, {"actor": "users"}):
        params = _drill(**fields)
        budget = DrillBudget(0, 1, counts)
        page = build_page(runtime, params, {}, "r", budget)
        assert page == build_page(runtime, params, {}, "r")
        assert "counted_at" not in page and budget.left == 0
    assert len(counts) == 0


def test_a_viewer_s_drill_section_says_when_its_kept_count_finished() -> None:
    runtime = _runtime()
    params = _drill(search="X")
    counts = DrillCounts()
    page = _ticks(runtime, params, counts, 8)[-1]
    state = DrillState(params)
    assert f'"counted_at":{page["counted_at"]}' in state.section(page, full=True)


def _viewer(broadcaster: Broadcaster, params: DrillParams) -> Viewer:
    viewer = Viewer(_never_sent)
    viewer.subscribed = True
    viewer.set_drill(DrillState(params))
    broadcaster.viewers.add(viewer)
    return viewer


class _Source:
    """The runtime, read the way the runtime host is."""

    def __init__(self, runtime: SchedulerRuntime) -> None:
        self.runtime = runtime

    def snapshot(self) -> QueueSnapshot:
        return self.runtime.snapshot()

    def stats(self) -> Mapping[str, Any] | None:
        return None

    def drill_page(self, params: DrillParams, budget: DrillBudget) -> Any:
        return build_page(self.runtime, params, {}, "r", budget)


async def _never_sent(text: str) -> None:
    raise AssertionError("no frame is sent here")
