"""A scrape reads the loop's state on the loop and formats the text in a worker thread."""

from __future__ import annotations

import math
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily

from api.wire.loop_metrics import (
    Build,
    LoopBoundCollector,
    TallyCounter,
    TallyHistogram,
    register_loop_bound,
    render,
)


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


def tallied(*events: tuple[str, str]) -> tuple[CollectorRegistry, TallyCounter]:
    registry = CollectorRegistry()
    counter = TallyCounter("requests_total", "Requests.", ("user", "priority"), registry=registry)
    for event in events:
        counter.inc(*event)
    return registry, counter


def test_a_tally_counter_writes_what_a_library_counter_fed_the_same_events_writes() -> None:
    events = (("b", "0"), ("a", "5"), ("b", "0"))
    registry, _ = tallied(*events)
    disable_created_metrics()  # as api.wire.metrics does for the served registry
    reference = CollectorRegistry()
    library = Counter("requests_total", "Requests.", ["user", "priority"], registry=reference)
    for event in events:
        library.labels(*event).inc()
    assert generate_latest(registry) == generate_latest(reference)
    assert b'requests_total{priority="0",user="b"} 2.0\nrequests_total{priority="5"' in (
        generate_latest(registry)
    )
    assert registry.get_sample_value("requests_total", {"user": "b", "priority": "0"}) == 2.0


def test_removing_a_tally_series_drops_it_and_an_unknown_one_is_nothing() -> None:
    registry, counter = tallied(("b", "0"), ("a", "5"))
    counter.remove("b", "0")
    counter.remove("never", "0")
    text = generate_latest(registry).decode()
    assert 'user="b"' not in text and 'requests_total{priority="5",user="a"} 1.0' in text


async def test_a_scrape_writes_the_counts_taken_on_the_loop_not_later_ones() -> None:
    registry, counter = tallied(("a", "0"))
    (family,) = list(counter.take()())
    counter.inc("a", "0")
    counter.inc("new", "0")
    assert [sample.value for sample in family.samples] == [1.0]
    assert b'requests_total{priority="0",user="a"} 2.0' in await render(registry)


BOUNDS = (0.005, 0.01, 0.1, 1.0, 10.0)
AMOUNTS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, *BOUNDS, math.inf, -math.inf, math.nan]),
)


def histograms(
    events: list[tuple[float, str, str]], bounds: tuple[float, ...] = BOUNDS
) -> tuple[bytes, bytes]:
    """The text of a TallyHistogram and of a library Histogram fed the same events."""
    disable_created_metrics()  # as api.wire.metrics does for the served registry
    ours, reference = CollectorRegistry(), CollectorRegistry()
    tally = TallyHistogram("wait_seconds", "Waits.", ("component", "priority"), bounds, ours)
    library = Histogram(
        "wait_seconds", "Waits.", ["component", "priority"], buckets=bounds, registry=reference
    )
    for amount, *values in events:
        tally.observe(amount, *values)
        library.labels(*values).observe(amount)
    return generate_latest(ours), generate_latest(reference)


@given(
    st.lists(
        st.tuples(AMOUNTS, st.sampled_from(["ingester", "store"]), st.sampled_from(["0", "7"]))
    )
)
def test_a_tally_histogram_writes_what_a_library_histogram_fed_the_same_events_writes(
    events: list[tuple[float, str, str]],
) -> None:
    ours, library = histograms(events)
    assert ours == library


def test_a_tally_histograms_bounds_need_not_end_at_infinity_or_be_positive() -> None:
    events = [(-2.0, "a", "0"), (0.5, "a", "0"), (math.inf, "b", "1")]
    negative, library = histograms(events, (-1.0, 0.0, 1.0))
    assert negative == library
    assert b'wait_seconds_bucket{component="a",le="1.0",priority="0"} 2.0' in negative
    assert b"wait_seconds_sum" not in negative  # as the library: no sum below a negative bound
    to_infinity, library = histograms(events, (0.5, math.inf))
    assert to_infinity == library
    assert b'wait_seconds_bucket{component="b",le="+Inf",priority="1"} 1.0' in to_infinity
    assert b'wait_seconds_sum{component="a",priority="0"} -1.5' in to_infinity


def test_a_tally_histogram_refuses_unsorted_or_too_few_buckets() -> None:
    with pytest.raises(ValueError, match="sorted"):
        TallyHistogram("h", "H.", (), (1.0, 0.5))
    with pytest.raises(ValueError, match="two buckets"):
        TallyHistogram("h", "H.", (), (math.inf,))
