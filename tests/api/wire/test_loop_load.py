"""The event loop's load: CPU per wall second, lag, CPU per query, and their /metrics."""

from __future__ import annotations

import asyncio
import threading

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from api.wire.loop_load import LAG_BUCKETS, LoopLoad, LoopLoadCollector, load_block
from api.wire.loop_metrics import register_loop_bound, render


class Clocks:
    """Wall, loop-thread CPU, process CPU and dispatches, all moved by hand."""

    def __init__(self) -> None:
        self.wall = 100.0
        self.thread = 5.0
        self.process = 7.0
        self.dispatched = 0

    def load(self, **kwargs: float) -> LoopLoad:
        return LoopLoad(
            clock=lambda: self.wall,
            thread_cpu=lambda: self.thread,
            process_cpu=lambda: self.process,
            dispatched=lambda: self.dispatched,
            **kwargs,
        )

    def advance(self, seconds: float, thread: float, process: float, dispatched: int) -> None:
        self.wall += seconds
        self.thread += thread
        self.process += process
        self.dispatched += dispatched


def test_no_figures_before_two_samples() -> None:
    clocks = Clocks()
    load = clocks.load()
    assert load.figures() is None
    load.sample(0.0)
    assert load.figures() is None
    assert load_block(load) == {}


def test_busy_is_the_loop_threads_cpu_per_wall_second_over_the_window() -> None:
    clocks = Clocks()
    load = clocks.load()
    load.sample(0.0)
    for _ in range(20):  # 10 s at a quarter of a core, then 10 s saturated
        clocks.advance(0.5, thread=0.125, process=0.2, dispatched=100)
        load.sample(0.0)
    for _ in range(20):
        clocks.advance(0.5, thread=0.5, process=0.6, dispatched=2000)
        load.sample(0.001)
    figures = load.figures(window=10.0)
    assert figures is not None
    assert figures.seconds == pytest.approx(10.0)
    assert figures.busy == pytest.approx(1.0)
    assert figures.process_cpu == pytest.approx(1.2)
    assert figures.dispatched == pytest.approx(4000.0)
    assert figures.cpu_per_query_us == pytest.approx(300.0)
    assert figures.lag_max == pytest.approx(0.001)
    wider = load.figures(window=20.0)
    assert wider is not None
    assert wider.busy == pytest.approx(0.625)


def test_busy_stays_within_one_core_and_cpu_per_query_needs_one_dispatch_a_second() -> None:
    clocks = Clocks()
    load = clocks.load()
    load.sample(0.0)
    # A coarse thread clock can step past the wall time between two samples.
    clocks.advance(0.5, thread=0.51, process=0.51, dispatched=0)
    load.sample(0.0)
    figures = load.figures()
    assert figures is not None
    assert figures.busy == 1.0
    assert figures.cpu_per_query_us is None
    block = load_block(load)
    assert block["busy"] == 1.0
    assert block["cpu_per_query_us"] is None


def test_the_worst_lag_is_the_worst_inside_the_window_only() -> None:
    clocks = Clocks()
    load = clocks.load()
    load.sample(0.0)
    clocks.advance(0.5, 0.1, 0.1, 0)
    load.sample(0.8)  # a long stall, 20 s before the end
    for _ in range(40):
        clocks.advance(0.5, 0.1, 0.1, 10)
        load.sample(0.002)
    figures = load.figures(window=10.0)
    assert figures is not None
    assert figures.lag_max == pytest.approx(0.002)
    everything = load.figures(window=60.0)
    assert everything is not None
    assert everything.lag_max == pytest.approx(0.8)


def test_the_lag_histogram_is_cumulative_as_prometheus_expects() -> None:
    clocks = Clocks()
    load = clocks.load()
    for lag in (0.0, 0.0005, 0.003, 0.3, 9.0):
        load.sample(lag)
    buckets, total = load.lag_histogram()
    counts = dict(buckets)
    assert list(counts) == [repr(b) for b in LAG_BUCKETS] + ["+Inf"]
    assert counts["0.001"] == 2
    assert counts["0.005"] == 3
    assert counts["0.25"] == 3
    assert counts["0.5"] == 4
    assert counts["2.5"] == 4
    assert counts["+Inf"] == 5
    assert total == pytest.approx(9.3035)


def test_samples_older_than_what_is_kept_are_dropped() -> None:
    clocks = Clocks()
    load = clocks.load(keep=5.0)
    for _ in range(100):
        clocks.advance(0.5, 0.25, 0.25, 1)
        load.sample(0.0)
    figures = load.figures(window=60.0)
    assert figures is not None
    assert figures.seconds <= 6.0


async def test_the_task_samples_on_the_loop_until_cancelled() -> None:
    clocks = Clocks()
    load = clocks.load(interval=0.0)
    task = asyncio.get_running_loop().create_task(load.run())
    for _ in range(5):
        clocks.advance(0.5, 0.1, 0.2, 3)
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    figures = load.figures(window=60.0)
    assert figures is not None
    assert figures.busy == pytest.approx(0.2)
    assert figures.dispatched == pytest.approx(6.0)


async def test_a_scrape_exports_the_loop_threads_cpu_and_the_lag_histogram() -> None:
    clocks = Clocks()
    load = clocks.load(interval=0.0)
    task = asyncio.get_running_loop().create_task(load.run())
    await asyncio.sleep(0)
    load.sample(0.003)
    registry = CollectorRegistry()
    register_loop_bound(registry, LoopLoadCollector(lambda: load))
    clocks.thread = 42.5  # read on the loop at the scrape, not from the last sample
    text = (await render(registry)).decode()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert "queue_inspector_event_loop_cpu_seconds_total 42.5" in text
    assert 'queue_inspector_event_loop_lag_seconds_bucket{le="0.001"}' in text
    assert 'queue_inspector_event_loop_lag_seconds_bucket{le="0.005"} ' in text
    assert "queue_inspector_event_loop_lag_seconds_sum 0.003" in text


def test_off_the_loop_the_cpu_counter_is_the_last_sample_not_another_threads_clock() -> None:
    clocks = Clocks()
    load = clocks.load()
    load.sample(0.0)  # never run(): no loop thread is known
    clocks.thread = 99.0
    registry = CollectorRegistry()
    register_loop_bound(registry, LoopLoadCollector(lambda: load))
    seen: list[str] = []
    worker = threading.Thread(target=lambda: seen.append(generate_latest(registry).decode()))
    worker.start()
    worker.join()
    assert "queue_inspector_event_loop_cpu_seconds_total 5.0" in seen[0]


def test_without_a_running_host_the_collector_exports_nothing() -> None:
    registry = CollectorRegistry()
    register_loop_bound(registry, LoopLoadCollector(lambda: None))
    assert b"event_loop" not in generate_latest(registry)
