"""SchedulerRuntime.fail / fail_matching: an operator's cancel, told to the frontend."""

from __future__ import annotations

import asyncio

from scheduler_core.model import QueueConfig, Request
from scheduler_core.runtime import SchedulerRuntime
from scheduler_core.stats import RollingStats
from tests.fakes import FakeClock
from tests.scheduler_core.test_runtime import Recorder


async def started() -> tuple[SchedulerRuntime, Recorder]:
    recorder = Recorder()
    runtime = SchedulerRuntime(QueueConfig(), clock=FakeClock(), observer=recorder)
    await runtime.start()
    return runtime, recorder


async def test_failing_a_queued_request_reports_it_failed_with_the_reason() -> None:
    runtime, recorder = await started()
    runtime.enqueue(Request(id="r1", tenant_id="a"))
    runtime.enqueue(Request(id="r2", tenant_id="a"))
    failed = runtime.fail("r1", "cancelled by operator alice")
    assert failed is not None and failed.id == "r1"
    assert recorder.kinds("r1") == ["enqueued", "failed"]
    assert ("failed", "r1", "cancelled by operator alice") in recorder.events
    assert len(runtime.queue) == 1
    assert runtime.fail("r1", "again") is None  # ended once only
    await runtime.stop(drain_timeout=0)


async def test_failing_a_running_request_frees_its_worker_and_tells_its_querier() -> None:
    runtime, recorder = await started()
    worker = runtime.connect_querier("q")
    runtime.enqueue(Request(id="r1", tenant_id="a"))
    request = await runtime.next_request("q", worker)
    aborted = runtime.cancellation(request.id)
    assert runtime.fail("r1", "cancelled by operator") is request
    assert aborted.done()
    assert runtime.complete("r1") is None  # a late result is dropped
    assert recorder.kinds("r1") == ["enqueued", "dispatched", "failed"]
    runtime.enqueue(Request(id="r2", tenant_id="a"))
    assert (await asyncio.wait_for(runtime.next_request("q", worker), 1)).id == "r2"
    await runtime.stop(drain_timeout=0)


async def test_failing_by_filter_fails_exactly_the_matching_queued_requests() -> None:
    runtime, recorder = await started()
    for i, (tenant, component) in enumerate(
        [("a", "ingester"), ("a", "store-gateway"), ("b", "store-gateway"), ("a", "store-gateway")]
    ):
        runtime.enqueue(Request(id=f"r{i}", tenant_id=tenant, component=component))
    failed = runtime.fail_matching("cancelled by operator", tenant="a", component="store-gateway")
    assert sorted(r.id for r in failed) == ["r1", "r3"]
    assert [rid for kind, rid, _ in recorder.events if kind == "failed"] == ["r1", "r3"]
    assert len(runtime.queue) == 2
    await runtime.stop(drain_timeout=0)


async def test_the_rolling_stats_count_an_operators_cancels_as_cancels() -> None:
    clock = FakeClock()
    stats = RollingStats(clock=clock)
    runtime = SchedulerRuntime(QueueConfig(), clock=clock, observer=stats)
    await runtime.start()
    for i in range(21):
        runtime.enqueue(Request(id=f"r{i}", tenant_id="a" if i < 19 else "b"))
    runtime.fail_matching("cancelled by operator alice", tenant="a")
    runtime.fail("r19", "cancelled by operator alice")
    runtime.cancel("r20")  # its frontend gave up
    counts = stats.counts(60)
    assert (counts["cancelled"], counts["failed"]) == (21, 0)
    await runtime.stop(drain_timeout=0)
