"""What the live views cost reaches /metrics: the loop seconds, viewers, cadence."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from prometheus_client import generate_latest

from api.wire.metrics import REGISTRY
from dashboard import live
from dashboard.live import Broadcaster, Viewer
from tests.dashboard.installed import installed
from tests.dashboard.test_live import Source


@pytest.fixture
def broadcaster() -> Iterator[Broadcaster]:
    with installed(Broadcaster(Source())) as instance:
        yield instance


def scraped(name: str) -> float:
    for line in generate_latest(REGISTRY).decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


async def test_each_tick_and_its_frames_add_to_the_loop_seconds_scraped(
    broadcaster: Broadcaster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "TICK_SECONDS", 0.001)
    sent: list[str] = []

    async def send(text: str) -> None:
        sent.append(text)
        if len(sent) == 2:
            broadcaster.unregister(viewer)  # the loop ends after this tick
        viewer.ack(viewer.seq)  # as the browser does

    viewer = Viewer(send)
    viewer.subscribe(viewer.params)
    broadcaster.register(viewer)
    assert scraped("queue_inspector_live_viewers") == 1
    assert broadcaster._task is not None
    await asyncio.wait_for(broadcaster._task, 5)
    assert len(sent) == 2
    assert broadcaster.loop_seconds > 0
    assert scraped("queue_inspector_live_loop_seconds_total") == broadcaster.loop_seconds
    assert scraped("queue_inspector_live_viewers") == 0
    assert scraped("queue_inspector_live_interval_seconds") == broadcaster.interval
