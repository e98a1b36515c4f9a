"""RollingStats on a fake clock: counts, wait percentiles, history, expiry."""

from __future__ import annotations

import random

import pytest

from scheduler_core.model import CancelReason, Request
from scheduler_core.stats import EVENTS, HistoryPoint, RollingStats, WaitHistogram
from tests.fakes import FakeClock


def _req(component: str = "ingester", priority: int = 0) -> Request:
    return Request(id="r", tenant_id="t", component=component, priority=priority)


def test_counts_cover_every_event_kind_within_the_window() -> None:
    clock = FakeClock(1000.0)
    stats = RollingStats(clock=clock)
    req = _req()
    stats.on_enqueued(req)
    stats.on_enqueued(req)
    stats.on_rejected(req, "too many outstanding requests")
    stats.on_dispatched(req, "q", 0, 0.5)
    stats.on_completed(req)
    stats.on_cancelled(req)
    stats.on_failed(req, "gone")
    assert stats.counts(60) == {
        "enqueued": 2,
        "dispatched": 1,
        "rejected": 1,
        "cancelled": 1,
        "completed": 1,
        "failed": 1,
    }
    assert set(stats.counts(60)) == set(EVENTS)


def test_a_failure_that_is_a_cancel_counts_as_cancelled() -> None:
    stats = RollingStats(clock=FakeClock(1000.0))
    stats.on_failed(_req(), CancelReason("cancelled by operator alice"))
    stats.on_failed(_req(), "querier q disconnected while running the request")
    counts = stats.counts(60)
    assert (counts["cancelled"], counts["failed"]) == (1, 1)


def test_events_older_than_the_asked_window_are_not_counted() -> None:
    clock = FakeClock(1000.0)
    stats = RollingStats(clock=clock)
    stats.on_enqueued(_req())
    clock.now += 30
    stats.on_enqueued(_req())
    assert stats.counts(10)["enqueued"] == 1
    assert stats.counts(60)["enqueued"] == 2


def test_buckets_past_the_retention_window_are_dropped() -> None:
    clock = FakeClock(1000.0)
    stats = RollingStats(clock=clock, window_seconds=5)
    for _ in range(20):
        stats.on_enqueued(_req())
        clock.now += 1
    # Seconds 1016..1020 are kept; the last event happened in 1019.
    assert stats.counts(1000)["enqueued"] == 4
    assert len(stats._seconds) <= 5


def test_rates_divide_by_the_window_in_seconds() -> None:
    clock = FakeClock(1000.0)
    stats = RollingStats(clock=clock)
    for _ in range(30):
        stats.on_dispatched(_req(), "q", 0, 0.01)
    assert stats.rates(10)["dispatched"] == pytest.approx(3.0)


def test_wait_percentiles_are_kept_apart_by_component_and_priority() -> None:
    clock = FakeClock(1000.0)
    stats = RollingStats(clock=clock)
    for _ in range(100):
        stats.on_dispatched(_req("ingester", 5), "q", 0, 0.010)
        stats.on_dispatched(_req("store-gateway", 0), "q", 1, 2.0)
    by_component = stats.wait_by_component(60)
    assert by_component["ingester"].p50 == pytest.approx(0.010, rel=0.06)
    assert by_component["store-gateway"].p99 == pytest.approx(2.0, rel=0.06)
    assert by_component["ingester"].samples == 100
    by_priority = stats.wait_by_priority(60)
    assert list(by_priority) == [0, 5]
    assert by_priority[5].max == pytest.approx(0.010)


def test_p99_sees_the_slow_tail_that_p50_ignores() -> None:
    rng = random.Random(7)
    hist = WaitHistogram()
    waits = [rng.uniform(0.001, 0.002) for _ in range(990)] + [1.0] * 10
    rng.shuffle(waits)
    for wait in waits:
        hist.add(wait)
    summary = hist.summary()
    assert summary.p50 < 0.0025
    assert summary.p99 < 0.0025
    assert hist.quantile(0.995) == pytest.approx(1.0, rel=0.06)
    assert summary.max == 1.0


def test_a_percentile_never_understates_the_true_value_by_more_than_a_bucket() -> None:
    rng = random.Random(11)
    hist = WaitHistogram()
    waits = sorted(rng.expovariate(10) for _ in range(5000))
    for wait in waits:
        hist.add(wait)
    true_p99 = waits[int(0.99 * len(waits)) - 1]
    assert true_p99 <= hist.quantile(0.99) <= true_p99 * 1.06


def test_zero_waits_report_as_zero_or_the_smallest_bucket() -> None:
    hist = WaitHistogram()
    hist.add(0.0)
    assert hist.quantile(0.5) == 0.0
    assert WaitHistogram().summary().samples == 0


def test_wait_memory_does_not_grow_with_the_number_of_requests() -> None:
    clock = FakeClock(1000.0)
    stats = RollingStats(clock=clock)
    rng = random.Random(3)
    for _ in range(50_000):
        stats.on_dispatched(_req(), "q", 0, rng.uniform(0, 1))
    hist = stats._seconds[-1].by_component["ingester"]
    assert len(hist.counts) < 300


def test_history_has_one_point_per_second_and_carries_the_queue_length_forward() -> None:
    clock = FakeClock(100.0)
    stats = RollingStats(clock=clock)
    stats.record_queue_length(4)
    stats.on_dispatched(_req(), "q", 0, 0.1)
    clock.now = 103.5
    stats.record_queue_length(1)
    clock.now = 104.2
    assert stats.history(5) == [
        HistoryPoint(100, 4, 1),
        HistoryPoint(101, 4, 0),
        HistoryPoint(102, 4, 0),
        HistoryPoint(103, 1, 0),
        HistoryPoint(104, 1, 0),
    ]


def test_history_remembers_the_length_sampled_before_its_oldest_second() -> None:
    clock = FakeClock(0.0)
    stats = RollingStats(clock=clock, window_seconds=3)
    stats.record_queue_length(9)
    clock.now = 10.0
    assert [p.queue_length for p in stats.history(3)] == [9, 9, 9]


def test_a_window_shorter_than_a_second_is_refused() -> None:
    with pytest.raises(ValueError):
        RollingStats(window_seconds=0)


def test_waits_read_between_events_match_a_fresh_merge_of_the_window() -> None:
    # Reads keep the closed seconds' merge for the rest of the second; reading
    # after every event, in every second, over windows of several spans, must
    # give what merging the window's waits afresh gives.
    rng = random.Random(7)
    clock = FakeClock(1000.0)
    stats = RollingStats(clock=clock, window_seconds=120)
    seen: list[tuple[int, str, int, float]] = []
    for _ in range(3000):
        clock.now += rng.choice((0.0, 0.01, 0.3, 1.0, 7.5))
        component, priority = rng.choice(("ingester", "store-gateway")), rng.choice((0, 5))
        wait = rng.expovariate(20.0)
        stats.on_dispatched(_req(component, priority), "q", 0, wait)
        seen.append((int(clock.now), component, priority, wait))
        window = rng.choice((1, 10, 60, 120))
        recent = [s for s in seen if s[0] > int(clock.now) - window]
        by_component: dict[str, WaitHistogram] = {}
        by_priority: dict[int, WaitHistogram] = {}
        for _second, comp, prio, waited in recent:
            by_component.setdefault(comp, WaitHistogram()).add(waited)
            by_priority.setdefault(prio, WaitHistogram()).add(waited)
        assert stats.wait_by_component(window) == {
            k: h.summary() for k, h in sorted(by_component.items())
        }
        assert stats.wait_by_priority(window) == {
            k: h.summary() for k, h in sorted(by_priority.items())
        }
