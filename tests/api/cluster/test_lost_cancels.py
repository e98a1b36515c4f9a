"""Loops that call Redis end when cancelled, even when the client absorbed the cancel.

redis-py's asyncio client sometimes returns normally from a command whose
task was cancelled (`api.cluster.lost_cancels`). Each fake below does the
same: it catches the first cancel and returns, or fails as a Redis outage
would, and the loop around it must still end.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from api.cluster import replica_board
from api.cluster.lost_cancels import raise_if_cancelled
from api.wire.config_group import keep_membership
from api.wire.layer_receive import receive_retrying
from api.wire.outage_log import OutageLog


class Absorbing:
    """An awaitable call that swallows the first cancel, then answers `then()`."""

    def __init__(self, then: Any) -> None:
        self.then = then
        self.absorbed = 0

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.absorbed:  # one lost cancel is the case; a failed test's clean-up is taken
            await asyncio.sleep(3600)
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.absorbed += 1
        return self.then()


async def ends_when_cancelled(coro: Any, call: Absorbing, settle: float = 0.01) -> None:
    task = asyncio.ensure_future(coro)
    await asyncio.sleep(settle)  # into the call
    task.cancel()
    # Not wait_for: its own cancel at the timeout would be absorbed too, and it waits for that.
    done, _ = await asyncio.wait([task], timeout=5)
    assert done, "the loop went on after its cancel"
    assert task.cancelled()
    assert call.absorbed == 1


async def test_raise_if_cancelled_raises_only_with_a_cancel_pending() -> None:
    raise_if_cancelled()  # no cancel: nothing
    call = Absorbing(lambda: None)

    async def one_call() -> None:
        await call()
        raise_if_cancelled()

    await ends_when_cancelled(one_call(), call)


async def test_the_replica_summary_loop_ends_when_its_exchange_absorbed_the_cancel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    call = Absorbing(lambda: None)
    monkeypatch.setattr(replica_board, "_exchange", call)
    # Nothing listens there: the withdraw at its exit fails fast, and is only logged.
    loop = replica_board.publish_loop(object(), "redis://127.0.0.1:9/0", "qi-test")
    await ends_when_cancelled(loop, call)


async def test_the_replica_summary_loop_ends_when_the_absorbed_cancel_came_out_as_a_redis_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import redis.asyncio as aioredis

    def fail() -> None:
        raise aioredis.ConnectionError("connection lost")

    call = Absorbing(fail)
    monkeypatch.setattr(replica_board, "_exchange", call)
    loop = replica_board.publish_loop(object(), "redis://127.0.0.1:9/0", "qi-test")
    await ends_when_cancelled(loop, call)


@pytest.mark.parametrize("then", ["a message", "an error"])
async def test_a_channel_layer_loop_ends_when_its_receive_absorbed_the_cancel(then: str) -> None:
    def answer() -> dict[str, Any]:
        if then == "an error":
            raise OSError("Redis went away")
        return {"type": "config.changed", "version": 1}

    call = Absorbing(answer)

    class Layer:
        receive = call

    outage = OutageLog(replica_board.log, "test receive")
    await ends_when_cancelled(receive_retrying(Layer(), "chan!1", outage), call)


async def test_the_group_membership_loop_ends_when_a_rejoin_absorbed_the_cancel() -> None:
    call = Absorbing(lambda: None)
    await ends_when_cancelled(keep_membership([call], interval=0.001), call, settle=0.05)
