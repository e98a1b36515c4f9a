"""The header's stuck queues and oldest request, and the longest-running list, from snapshots."""

from __future__ import annotations

from dashboard.snapshot_summaries import LONGEST_ROWS, longest_running, stuck_summary
from scheduler_core.model import QueueConfig, Request
from scheduler_core.runtime import SchedulerRuntime
from tests.fakes import FakeClock


def scheduler() -> tuple[SchedulerRuntime, FakeClock]:
    clock = FakeClock(100.0)
    return SchedulerRuntime(QueueConfig(), clock=clock), clock


def test_an_empty_queue_has_no_stuck_leaf_and_no_oldest_request() -> None:
    runtime, _ = scheduler()
    assert stuck_summary(runtime.snapshot(), 30.0) == {
        "threshold": 30.0,
        "leaves": 0,
        "tenants": 0,
        "oldest": None,
    }


def test_the_longest_running_list_keeps_the_longest_first_with_their_replica() -> None:
    runtime, clock = scheduler()
    for i in range(LONGEST_ROWS + 2):
        runtime.enqueue(Request(id=f"r{i}", tenant_id="acme"))
    for _ in range(LONGEST_ROWS + 2):  # r0 runs from 100.0, r1 from 101.0, ...
        runtime.queue.dequeue("q-1", runtime.connect_querier("q-1"))
        clock.now += 1.0
    # Taken at 112.0 on the queue's clock, when the wall clock says 1000.0.
    rows = longest_running(runtime.snapshot(), ["replica-a"], 1_000.0)
    assert [r[0] for r in rows] == [f"r{i}" for i in range(LONGEST_ROWS)]
    querier, since, replica = rows[0][4], rows[0][6], rows[0][7]
    assert (querier, since, replica) == ("q-1", 988.0, "replica-a")
