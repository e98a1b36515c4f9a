"""The broadcaster's loop budget: what a viewer's frames cost is counted."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import logging

import pytest
from autobahn.exception import Disconnected

from dashboard.live import Broadcaster, Viewer
from scheduler_core.model import INGESTER, QueueConfig, Request
from scheduler_core.queue import RequestQueue
from scheduler_core.snapshot import QueueSnapshot


class Source:
    def __init__(self) -> None:
        self.queue = RequestQueue(QueueConfig(), clock=lambda: 100.0)
        self.queue.enqueue(Request(id="r1", tenant_id="acme", component=INGESTER))

    def snapshot(self) -> QueueSnapshot:
        return self.queue.snapshot()

    def stats(self) -> None:
        return None


async def test_the_cpu_a_viewers_sends_take_is_charged_to_the_broadcaster_once() -> None:
    frames: list[str] = []

    async def send(text: str) -> None:
        # Real work on the loop thread, as framing and writing a frame is.
        for _ in range(200):
            hashlib.sha256(text.encode() * 50).digest()
        frames.append(text)

    broadcaster = Broadcaster(Source(), autostart=False)
    viewer = Viewer(send)
    broadcaster.register(viewer)
    viewer.subscribe(viewer.params)
    broadcaster.tick()
    await asyncio.sleep(0)  # let the send task run
    assert len(frames) == 1
    assert viewer.send_seconds > 0
    charged = broadcaster._sends_cost()
    assert charged > 0
    assert viewer.send_seconds == 0
    assert broadcaster._sends_cost() == 0


async def test_a_frame_for_a_browser_that_just_closed_is_dropped_without_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def send(text: str) -> None:
        raise Disconnected("Attempt to send on a closed protocol")  # as Daphne's send does

    broadcaster = Broadcaster(Source(), autostart=False)
    viewer = Viewer(send)
    broadcaster.register(viewer)
    viewer.subscribe(viewer.params)
    broadcaster.tick()
    await asyncio.sleep(0)
    assert not viewer.busy()  # the next tick may offer a frame (the disconnect unregisters)
    viewer._task = None  # the finished task, collected as the next frame replaces it
    gc.collect()  # an exception no one retrieved is logged as its task is collected
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_the_dashboard_keeps_the_charts_history_beside_every_runtime() -> None:
    from api.wire import runtime_host
    from dashboard.live import keep_history

    assert runtime_host._backgrounds["inspector chart history"] is keep_history
