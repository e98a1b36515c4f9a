"""queue_inspector_failed_requests_total: each runtime failure lands on one fixed reason."""

from __future__ import annotations

from typing import Any

from api.wire.failure_metrics import REASONS, FailureCounter, failure_label
from scheduler_core.model import QueueConfig, Request
from scheduler_core.runtime import SchedulerRuntime
from tests.fakes import FakeClock


class Failures:
    """Observer that counts failures as the metrics observer does, into its own counter."""

    def __init__(self) -> None:
        self.counter = FailureCounter()
        self.reasons: list[str] = []

    def on_failed(self, request: Request, reason: str) -> None:
        self.reasons.append(reason)
        self.counter.count(request.tenant_id, reason)

    def rows(self) -> dict[tuple[str, ...], float]:
        return {values: value for values, value in self.counter.take()()[0].rows}


def bare_runtime() -> tuple[SchedulerRuntime, Failures]:
    failures = Failures()
    return SchedulerRuntime(QueueConfig(), clock=FakeClock(), observer=failures), failures


async def run_and_lose_twice(runtime: SchedulerRuntime, request_id: str, querier: str) -> None:
    """The querier takes the request and vanishes, twice: the retry is spent, then it fails."""
    runtime.enqueue(Request(id=request_id, tenant_id="t"))
    for _ in range(2):
        worker = runtime.connect_querier(querier)
        assert (await runtime.next_request(querier, worker)).id == request_id
        runtime.disconnect_querier_worker(querier, worker)


async def test_a_querier_lost_twice_counts_as_querier_disconnected_whatever_its_id() -> None:
    runtime, failures = bare_runtime()
    await run_and_lose_twice(runtime, "r1", "querier-7.zone-a")
    await run_and_lose_twice(runtime, "r2", "q-12")
    # The runtime's text names each querier; the label does not.
    assert [r.split()[1] for r in failures.reasons] == ["querier-7.zone-a", "q-12"]
    assert failures.rows() == {("t", "querier_disconnected"): 2.0}


async def test_requests_left_at_the_shutdown_deadline_count_as_shutting_down() -> None:
    runtime, failures = bare_runtime()
    runtime.enqueue(Request(id="queued", tenant_id="t"))
    runtime.enqueue(Request(id="running", tenant_id="u"))
    worker = runtime.connect_querier("q")
    await runtime.next_request("q", worker)
    await runtime.stop(drain_timeout=0)
    assert failures.rows() == {("t", "shutting_down"): 1.0, ("u", "shutting_down"): 1.0}


async def test_an_operators_cancels_count_as_operator_cancelled() -> None:
    runtime, failures = bare_runtime()
    for n in range(3):
        runtime.enqueue(Request(id=f"r{n}", tenant_id="t"))
    runtime.fail("r0", "cancelled by operator ann: runaway")
    runtime.fail_matching("cancelled by an operator", tenant="t")
    assert failures.rows() == {("t", "operator_cancelled"): 3.0}


def test_a_reason_no_rule_knows_counts_as_other_never_as_itself() -> None:
    assert failure_label("querier q-1 timed out") == "other"
    assert failure_label("scheduler shutting down!") == "other"
    assert failure_label("") == "other"
    assert {failure_label(r) for r in ("a", "b c", "querier x")} == {"other"}


def test_forgetting_a_tenant_drops_its_series_of_every_reason_and_no_one_elses() -> None:
    counter = FailureCounter()
    for label in REASONS:
        counter.inc("gone", label)
    counter.inc("stays", "shutting_down")
    counter.forget("gone")
    counter.forget("never-seen")
    rows: Any = counter.take()()[0].rows
    assert rows == [(("stays", "shutting_down"), 1.0)]


async def test_a_request_its_querier_finished_without_a_result_counts_as_querier_no_result() -> (
    None
):
    runtime, failures = bare_runtime()
    runtime.enqueue(Request(id="r1", tenant_id="t"))
    worker = runtime.connect_querier("q-3")
    await runtime.next_request("q-3", worker)

    runtime.fail_unanswered("r1", "q-3")

    assert failures.reasons == ["querier q-3 finished the request without sending its result"]
    assert failures.rows() == {("t", "querier_no_result"): 1.0}
