"""TenantUsage on a fake clock, fed by a real queue's stamps: querier time per tenant."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.model import Request
from scheduler_core.tenant_usage import TenantUsage
from tests.fakes import FakeClock, clocked_queue

_ids = itertools.count()


class Scene:
    """A queue and the usage observer on one clock; the test plays the runtime."""

    def __init__(self, now: float = 1000.0, window: float = 60.0, bucket: float = 5.0) -> None:
        self.queue, self.clock = clocked_queue(now)
        self.usage = TenantUsage(clock=self.clock, window_seconds=window, bucket_seconds=bucket)
        self.workers = [self.queue.connect_querier("q") for _ in range(2)]
        self.held: list[Request] = []

    def start(self, tenant: str, worker: int = 0) -> Request:
        """Queue one request of `tenant` and hand it to `worker` at once."""
        request = Request(id=f"r{next(_ids)}", tenant_id=tenant)
        self.queue.enqueue(request)
        taken, _ = self.queue.dequeue("q", worker)
        assert taken is request
        self.usage.on_dispatched(request, "q", worker, 0.0)
        self.held.append(request)
        return request

    def finish(self, request: Request) -> None:
        assert self.queue.complete(request.id) is request
        self.held.remove(request)
        self.usage.on_completed(request)

    def running(self) -> list[tuple[str, float]]:
        return [(r.tenant_id, r.dispatched_at) for r in self.held if r.dispatched_at is not None]


def _seconds(usage: TenantUsage) -> dict[str, float]:
    return {row.tenant_id: round(row.querier_seconds, 6) for row in usage.report().rows}


def test_a_tenant_with_slow_queries_holds_the_queriers_at_the_same_request_rate() -> None:
    scene = Scene()
    for _ in range(10):
        slow, fast = scene.start("slow", 0), scene.start("fast", 1)
        scene.clock.now += 0.01
        scene.finish(fast)
        scene.clock.now += 0.99
        scene.finish(slow)
    report = scene.usage.report()
    assert [row.tenant_id for row in report.rows] == ["slow", "fast"]
    assert _seconds(scene.usage) == {"slow": 10.0, "fast": 0.1}
    assert [row.dispatched for row in report.rows] == [10, 10]
    assert [row.ended for row in report.rows] == [10, 10]
    assert report.querier_seconds == pytest.approx(10.1)


def test_a_long_query_adds_only_its_part_inside_the_window() -> None:
    scene = Scene(now=1000.0)  # a bucket boundary: the window's buckets line up with now
    request = scene.start("a")
    scene.clock.now += 120.0
    scene.finish(request)
    report = scene.usage.report()
    assert report.span_seconds == pytest.approx(60.0)
    assert report.rows[0].querier_seconds == pytest.approx(60.0)


@pytest.mark.parametrize("into_bucket", [0.0, 1.0, 2.5, 4.9])
def test_a_worker_busy_all_along_holds_the_window_and_never_more(into_bucket: float) -> None:
    """However far into its 5 s bucket the report is read: 60 s, not up to 65."""
    scene = Scene(now=1000.0)
    run = scene.start("a")
    for step in range(1, 201):  # 100 s of back-to-back 7 s runs, 0.5 s steps
        scene.clock.now = 1000.0 + step * 0.5
        if step % 14 == 0:
            scene.finish(run)
            run = scene.start("a")
    scene.clock.now += into_bucket
    report = scene.usage.report(running=scene.running())
    assert report.span_seconds == 60.0
    assert report.rows[0].querier_seconds == pytest.approx(60.0)
    assert report.querier_seconds == pytest.approx(60.0)


def test_running_queries_count_up_to_now_clipped_to_the_span() -> None:
    scene = Scene(now=1000.0)
    scene.start("a", 0)
    scene.clock.now += 30.0
    scene.start("b", 1)
    scene.clock.now += 50.0
    report = scene.usage.report(running=scene.running())
    rows = {row.tenant_id: row for row in report.rows}
    assert rows["a"].querier_seconds == pytest.approx(report.span_seconds)
    assert rows["b"].querier_seconds == pytest.approx(50.0)
    assert (rows["a"].running, rows["b"].running) == (1, 1)
    # Without the running ones: b's dispatch, nothing of a's (80 s ago).
    assert _seconds(scene.usage) == {"b": 0.0}


def test_a_run_dispatched_at_the_clock_s_zero_is_counted() -> None:
    """A queue on a clock that starts at 0 (a simulation) stamps 0.0: still a run."""
    scene = Scene(now=0.0)
    request = scene.start("a")
    assert request.dispatched_at == 0.0
    scene.clock.now = 2.0
    scene.finish(request)
    assert _seconds(scene.usage) == {"a": 2.0}


def test_a_run_cut_short_by_a_disconnect_counts_and_a_cancel_while_requeued_adds_no_time() -> None:
    scene = Scene()
    request = scene.start("a")
    scene.clock.now += 3.0
    scene.usage.on_interrupted(request)  # as the runtime tells it, before the requeue
    scene.queue.requeue_front(request)
    assert request.dispatched_at is None
    scene.clock.now += 2.0
    assert scene.queue.cancel(request.id) is request
    scene.held.remove(request)
    scene.usage.on_cancelled(request)
    assert _seconds(scene.usage) == {"a": 3.0}
    (row,) = scene.usage.report().rows
    assert (row.dispatched, row.ended) == (1, 1)


@pytest.mark.parametrize("ending", ["cancelled", "failed"])
def test_a_run_that_ends_cancelled_or_failed_counts_the_time_it_held(ending: str) -> None:
    scene = Scene()
    request = scene.start("a")
    scene.clock.now += 2.5
    assert scene.queue.cancel(request.id) is request
    scene.held.remove(request)
    if ending == "cancelled":
        scene.usage.on_cancelled(request)
    else:
        scene.usage.on_failed(request, "operator cancel")
    assert _seconds(scene.usage) == {"a": 2.5}
    assert scene.usage.report().rows[0].ended == 1


def test_waits_and_rejections_are_counted_per_tenant() -> None:
    usage = TenantUsage(clock=FakeClock(50.0))
    request = Request(id="r", tenant_id="t")
    for wait in (0.5, 1.5):
        usage.on_dispatched(request, "q", 0, wait)
    usage.on_rejected(request, "too many outstanding requests")
    (row,) = usage.report().rows
    assert (row.dispatched, row.wait_mean_seconds, row.wait_max_seconds, row.rejected) == (
        2,
        1.0,
        1.5,
        1,
    )


def test_everything_expires_after_the_window_and_an_idle_scheduler_keeps_nothing() -> None:
    scene = Scene()
    for _ in range(50):
        scene.finish(scene.start("a"))
        scene.clock.now += 2.0
    assert len(scene.usage._buckets) <= 13 + 1  # noqa: SLF001 - the memory bound itself
    scene.clock.now += 61.0
    assert scene.usage.report().rows == ()
    assert scene.usage._buckets == {}  # noqa: SLF001


def test_a_report_lists_the_busiest_tenants_and_sums_them_all() -> None:
    scene = Scene()
    for n, tenant in enumerate(["a", "b", "c", "d"]):
        request = scene.start(tenant)
        scene.clock.now += n + 1.0
        scene.finish(request)
    report = scene.usage.report(limit=2)
    assert [row.tenant_id for row in report.rows] == ["d", "c"]
    assert (report.tenant_count, report.querier_seconds) == (4, pytest.approx(10.0))


def test_a_tenant_whose_only_run_began_before_the_span_is_listed_by_its_running_time() -> None:
    scene = Scene(now=1000.0)
    scene.start("old")
    scene.clock.now += 200.0
    report = scene.usage.report(running=scene.running())
    (row,) = report.rows
    assert (row.tenant_id, row.dispatched, row.running) == ("old", 0, 1)
    assert row.querier_seconds == pytest.approx(report.span_seconds)


def test_a_tally_is_kept_whole_when_the_event_that_expires_its_bucket_is_its_own() -> None:
    scene = Scene(now=1000.0)
    request = scene.start("a")
    scene.clock.now += 70.0  # the dispatch's bucket expires with the end's new bucket
    scene.finish(request)
    (row,) = scene.usage.report().rows
    assert (row.dispatched, row.ended) == (0, 1)
    assert row.querier_seconds == pytest.approx(scene.usage.report().span_seconds)


def test_bad_bucket_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="bucket_seconds"):
        TenantUsage(window_seconds=5.0, bucket_seconds=10.0)
    with pytest.raises(ValueError, match="bucket_seconds"):
        TenantUsage(bucket_seconds=0.0)


_run = st.tuples(
    st.sampled_from(["a", "b", "c"]),
    st.floats(0.0, 200.0),  # start, seconds after the scene's start
    st.floats(0.0, 150.0),  # how long it runs
)


@settings(max_examples=200, deadline=None)
@given(runs=st.lists(_run, max_size=12), read_after=st.floats(0.0, 400.0))
def test_ended_runs_add_their_overlap_with_the_window_the_cut_bucket_pro_rata(
    runs: list[tuple[str, float, float]], read_after: float
) -> None:
    start = 10_000.0
    clock = FakeClock(start)
    usage = TenantUsage(clock=clock, window_seconds=60.0, bucket_seconds=5.0)
    events: list[tuple[float, int, str, Request]] = []
    for n, (tenant, begin, length) in enumerate(runs):
        request = Request(id=f"r{n}", tenant_id=tenant)
        events.append((start + begin, 0, "start", request))
        events.append((start + begin + length, 1, "end", request))
    read_at = start + read_after
    expected: dict[str, float] = {}
    ended_by_read = []
    for at, _, kind, request in sorted(events, key=lambda e: (e[0], e[1])):
        if at > read_at:
            break
        clock.now = at
        if kind == "start":
            request.dispatched_at = at  # as the queue stamps it at dequeue
        else:
            usage.on_completed(request)
            ended_by_read.append((request, at))
    clock.now = read_at
    report = usage.report()
    assert report.span_seconds == min(60.0, read_at - start)  # counting began at `start`
    since = read_at - 60.0
    exact: dict[str, float] = {}
    for request, ended in ended_by_read:
        assert request.dispatched_at is not None
        begun = request.dispatched_at
        exact[request.tenant_id] = exact.get(request.tenant_id, 0.0) + max(
            0.0, ended - max(begun, since)
        )
        # Each 5 s bucket's part of the run, the one `since` falls in cut pro rata.
        for index in range(math.floor(begun / 5.0), math.floor(ended / 5.0) + 1):
            low, high = index * 5.0, (index + 1) * 5.0
            part = max(0.0, min(ended, high) - max(begun, low))
            kept = min(1.0, max(0.0, (high - since) / 5.0))
            expected[request.tenant_id] = expected.get(request.tenant_id, 0.0) + part * kept
    got = {row.tenant_id: row.querier_seconds for row in report.rows}
    for tenant in set(expected) | set(got):
        assert got.get(tenant, 0.0) == pytest.approx(expected.get(tenant, 0.0), abs=1e-6)
        # Off the exact overlap by at most what the cut bucket held before `since`.
        assert abs(got.get(tenant, 0.0) - exact.get(tenant, 0.0)) <= 5.0 + 1e-6
    # Once everything has expired, the running totals are gone with the buckets.
    clock.now += 200.0
    assert usage.report().rows == ()
    assert usage._totals == {}  # noqa: SLF001 - the totals' invariant


def test_in_its_first_minute_a_report_spans_the_time_since_counting_began() -> None:
    """15 of 28 workers busy 12 s after a start read as 15, not as 3 over a whole minute."""
    scene = Scene(now=1000.0)
    scene.clock.now += 12.0
    running = [("a", 1000.0)] * 15
    report = scene.usage.report(running=running)
    assert report.span_seconds == pytest.approx(12.0)
    assert report.querier_seconds / report.span_seconds == pytest.approx(15.0)
    scene.clock.now += 120.0
    assert scene.usage.report(running=running).span_seconds == 60.0


async def test_a_run_its_querier_dropped_counts_once_ended_beside_its_retry() -> None:
    from scheduler_core.runtime import SchedulerRuntime

    clock = FakeClock(100.0)
    usage = TenantUsage(clock=clock, window_seconds=60.0, bucket_seconds=5.0)
    runtime = SchedulerRuntime(clock=clock, observer=usage)
    await runtime.start()
    try:
        first = runtime.connect_querier("q")
        runtime.enqueue(Request(id="r", tenant_id="a"))
        taken = await runtime.next_request("q", first)
        clock.now += 2.5
        runtime.disconnect_querier_worker("q", first)  # mid-run: back to the front
        second = runtime.connect_querier("q")
        retried = await runtime.next_request("q", second)
        assert retried is taken and retried.attempts == 2
        clock.now += 1.5
        runtime.complete("r")
    finally:
        await runtime.stop(drain_timeout=0)
    (row,) = usage.report().rows
    assert (row.dispatched, row.ended, round(row.querier_seconds, 6)) == (2, 2, 4.0)
