"""A worker's "done" and its request's cancellation, racing in one loop turn.

The querier loop awaits the worker's next message in its own task and lets
the cancellation cancel that task; these pin down which one wins and that a
late cancellation never hits the worker's next wait.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from api.wire.grpc.querier_loop import QuerierLoopServicer, _Outcome
from scheduler_core.pb import schedulerpb_pb2 as pb


class Context:
    """A querier stream whose next message arrives when the test says."""

    def __init__(self) -> None:
        self.arrived: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    async def read(self) -> Any:
        return await self.arrived


async def outcome_then_wait(cancelled: asyncio.Future[None], context: Context) -> _Outcome:
    servicer = QuerierLoopServicer(runtime=None, foreign=None)  # type: ignore[arg-type]
    outcome = await servicer._worker_outcome(cancelled, context)  # type: ignore[arg-type]
    for _ in range(3):
        await asyncio.sleep(0)  # the worker's next waits must not be cancelled
    return outcome


async def test_a_cancellation_after_the_done_arrived_leaves_the_worker_running() -> None:
    context, cancelled = Context(), asyncio.get_running_loop().create_future()
    task = asyncio.get_running_loop().create_task(outcome_then_wait(cancelled, context))
    await asyncio.sleep(0)
    context.arrived.set_result(pb.QuerierToScheduler())
    cancelled.set_result(None)  # its callback runs after the task has read the done

    assert await task is _Outcome.DONE


async def test_a_cancellation_before_the_done_is_read_wins() -> None:
    context, cancelled = Context(), asyncio.get_running_loop().create_future()
    task = asyncio.get_running_loop().create_task(outcome_then_wait(cancelled, context))
    await asyncio.sleep(0)
    cancelled.set_result(None)

    assert await task is _Outcome.CANCELLED
    assert not task.cancelled()


async def test_a_cancellation_from_outside_still_ends_the_call() -> None:
    context, cancelled = Context(), asyncio.get_running_loop().create_future()
    task = asyncio.get_running_loop().create_task(outcome_then_wait(cancelled, context))
    await asyncio.sleep(0)
    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task
    assert not cancelled.done()
