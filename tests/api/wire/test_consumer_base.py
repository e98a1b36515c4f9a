"""MachineConsumer reads its socket in its own task, in order, until the disconnect."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from api.wire.consumers.base import MachineConsumer


async def test_messages_are_dispatched_in_order_in_the_consumers_task_until_the_disconnect() -> (
    None
):
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for n in range(5):
        inbox.put_nowait({"type": "websocket.receive", "text": f"not json {n}"})
    inbox.put_nowait({"type": "websocket.disconnect", "code": 1000})
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    loop = asyncio.get_running_loop()
    started: list[Any] = []
    default_factory = loop.get_task_factory()

    def counting_factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> Any:
        started.append(coro)
        if default_factory is not None:
            return default_factory(loop, coro, **kwargs)
        return asyncio.Task(coro, loop=loop, **kwargs)

    consumer = MachineConsumer()({"type": "websocket", "headers": []}, inbox.get, send)
    running = loop.create_task(consumer)  # as Daphne runs an application instance
    loop.set_task_factory(counting_factory)
    try:
        await asyncio.wait_for(running, 5)
    finally:
        loop.set_task_factory(default_factory)
    # One `error` reply per malformed frame, in the order the frames came,
    # and no task started to read or dispatch any of them (Channels' own
    # loop starts one per message).
    replies = [json.loads(m["text"]) for m in sent if m["type"] == "websocket.send"]
    assert [r["type"] for r in replies] == ["error"] * 5
    assert all("malformed JSON" in r["error"] for r in replies)
    assert started == []
    assert inbox.empty()
