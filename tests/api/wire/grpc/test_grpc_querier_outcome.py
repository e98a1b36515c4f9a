"""A worker's "done" and its request's cancellation, racing in one loop turn.

The querier loop awaits the worker's next message in its own task and lets
the cancellation cancel that task; these pin down which one wins and that a
late cancellation never hits the worker's next wait.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest
from google.protobuf.message import DecodeError

from api.wire.grpc.querier_loop import QuerierLoopServicer, _Outcome
from api.wire.grpc.streams import AbortError
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


class JunkContext:
    """A querier stream whose next message is junk; its abort awaits the status going out.

    As grpcio's does: the status is sent before the abort raises, and a
    second abort on the call is a usage error.
    """

    def __init__(self) -> None:
        self.sent: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.aborts: list[grpc.StatusCode] = []

    async def read(self) -> Any:
        raise DecodeError("Error parsing message")

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        if self.aborts:
            raise RuntimeError("Abort already called!")
        self.aborts.append(code)
        await self.sent
        raise AbortError(code, details)


async def test_a_cancellation_while_junk_is_being_refused_does_not_abort_the_call_twice() -> None:
    context, cancelled = JunkContext(), asyncio.get_running_loop().create_future()
    servicer = QuerierLoopServicer(runtime=None, foreign=None)  # type: ignore[arg-type]
    task = asyncio.get_running_loop().create_task(
        servicer._worker_outcome(cancelled, context)  # type: ignore[arg-type]
    )
    await asyncio.sleep(0)  # the junk was read: its abort is sending the status
    assert context.aborts == [grpc.StatusCode.INVALID_ARGUMENT]
    cancelled.set_result(None)  # the frontend went away meanwhile
    context.sent.set_result(None)

    with pytest.raises(AbortError) as refused:
        await task
    assert refused.value.code is grpc.StatusCode.INVALID_ARGUMENT
    assert context.aborts == [grpc.StatusCode.INVALID_ARGUMENT]
