"""A scrape reads the loop's state on the loop and formats the text in a worker thread."""

from __future__ import annotations

import threading

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily

from api.wire.loop_metrics import Build, LoopBoundCollector, register_loop_bound, render


class Probe(LoopBoundCollector):
    """Notes the thread that took its state and the one that built its family."""

    def __init__(self) -> None:
        self.taken_on: list[int] = []
        self.built_on: list[int] = []

    def take(self) -> Build:
        self.taken_on.append(threading.get_ident())

        def build() -> list[GaugeMetricFamily]:
            self.built_on.append(threading.get_ident())
            return [GaugeMetricFamily("probe_value", "A probe.", value=1)]

        return build


def probed() -> tuple[CollectorRegistry, Probe]:
    registry, probe = CollectorRegistry(), Probe()
    register_loop_bound(registry, probe)
    return registry, probe


async def test_a_scrape_takes_loop_state_on_the_loop_and_formats_it_in_a_worker_thread() -> None:
    registry, probe = probed()
    text = await render(registry)
    assert b"probe_value 1.0" in text
    loop_thread = threading.get_ident()
    assert probe.taken_on == [loop_thread]
    assert len(probe.built_on) == 1 and probe.built_on[0] != loop_thread


def test_outside_a_scrape_collect_takes_and_builds_in_the_callers_thread() -> None:
    registry, probe = probed()
    assert b"probe_value 1.0" in generate_latest(registry)
    assert probe.taken_on == probe.built_on == [threading.get_ident()]


async def test_another_registrys_collectors_are_not_taken_by_a_scrape() -> None:
    registry, probe = probed()
    _, other = probed()
    await render(registry)
    assert len(probe.taken_on) == 1
    assert other.taken_on == []
