"""`write_latest` writes `generate_latest`'s bytes; `RowFamily` reads as a library family."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeHistogramMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    StateSetMetricFamily,
    SummaryMetricFamily,
    UnknownMetricFamily,
)
from prometheus_client.metrics_core import Metric
from prometheus_client.samples import Sample

from api.wire import exposition
from api.wire.exposition import RowFamily, write_latest


class Families:
    """A collector yielding whatever families the test gives it, anew on each scrape."""

    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> list[Metric]:
        return self.families

    def describe(self) -> list[Metric]:
        return []


def registry_of(*families: Metric) -> tuple[CollectorRegistry, Families]:
    registry, collector = CollectorRegistry(), Families(list(families))
    registry.register(collector)
    return registry, collector


names = st.from_regex(r"\A[a-zA-Z_:][a-zA-Z0-9_:]{0,12}\Z")
# Label names outside the legacy set are written with underscores; values
# carry every character the format escapes.
label_names = st.one_of(names, st.sampled_from(["a.b", "é", "with space", "0lead"]))
label_values = st.text(alphabet=st.sampled_from('ab"\\\n é{}=,'), max_size=6)
numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.sampled_from([0.0, 1e-7, 1234567.0, 12345678.9, 1e21, -0.0]),
)
timestamps = st.one_of(st.none(), st.floats(min_value=0, max_value=4e9))


@st.composite
def family(draw: Any) -> Metric:
    kind = draw(
        st.sampled_from(
            ["counter", "gauge", "unknown", "histogram", "summary", "info", "stateset", "rows"]
        )
    )
    name = draw(names)
    doc = draw(st.text(alphabet=st.sampled_from('dx\\\n"é '), max_size=8))
    labels = draw(st.lists(label_names, max_size=3, unique=True))
    rows = draw(
        st.lists(
            st.tuples(st.lists(label_values, min_size=len(labels), max_size=len(labels)), numbers),
            max_size=4,
        )
    )
    stamp = draw(timestamps)
    if kind == "rows":
        metric: Metric = RowFamily(name, doc, draw(st.sampled_from(["counter", "gauge"])), labels)
        for values, value in rows:
            metric.add_metric(values, value)
        return metric
    if kind == "counter":
        metric = CounterMetricFamily(name, doc, labels=labels)
        for values, value in rows:
            metric.add_metric(values, value, created=draw(timestamps), timestamp=stamp)
    elif kind in ("gauge", "unknown"):
        cls = GaugeMetricFamily if kind == "gauge" else UnknownMetricFamily
        metric = cls(name, doc, labels=labels)
        for values, value in rows:
            metric.add_metric(values, value, timestamp=stamp)
    elif kind == "histogram":
        metric = draw(st.sampled_from([HistogramMetricFamily, GaugeHistogramMetricFamily]))(
            name, doc, labels=labels
        )
        for values, value in rows:
            metric.add_metric(values, [("1.0", 1), ("+Inf", 2)], value, timestamp=stamp)
    elif kind == "summary":
        metric = SummaryMetricFamily(name, doc, labels=labels)
        for values, value in rows:
            metric.add_metric(values, 3, value, timestamp=stamp)
    elif kind == "info":
        metric = InfoMetricFamily(name, doc, labels=labels)
        for values, _ in rows:
            metric.add_metric(values, {"version": draw(label_values)}, timestamp=stamp)
    else:
        metric = StateSetMetricFamily(name, doc, labels=labels)
        for values, _ in rows:
            metric.add_metric(values, {"up": True, "down": False}, timestamp=stamp)
    return metric


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(family(), max_size=4), st.lists(family(), max_size=4))
def test_every_scrape_writes_exactly_what_generate_latest_writes(
    first: list[Metric], then: list[Metric]
) -> None:
    registry, collector = registry_of(*first)
    assert write_latest(registry) == generate_latest(registry)
    # The next scrape reuses the first one's prefixes: new values, new series.
    collector.families = then + first
    assert write_latest(registry) == generate_latest(registry)


def test_a_series_kept_from_the_last_scrape_is_written_with_its_new_value() -> None:
    gauge = GaugeMetricFamily("queue_length", "Queued.", labels=["user"])
    gauge.add_metric(["a"], 1)
    registry, collector = registry_of(gauge)
    assert b'queue_length{user="a"} 1.0\n' in write_latest(registry)
    again = GaugeMetricFamily("queue_length", "Queued.", labels=["user"])
    again.add_metric(["a"], 7)
    collector.families = [again]
    assert b'queue_length{user="a"} 7.0\n' in write_latest(registry)


def test_only_the_last_scrapes_series_are_kept() -> None:
    gauge = GaugeMetricFamily("queue_length", "Queued.", labels=["user"])
    for i in range(100):
        gauge.add_metric([f"tenant-{i}"], i)
    registry, collector = registry_of(gauge)
    write_latest(registry)
    fewer = GaugeMetricFamily("queue_length", "Queued.", labels=["user"])
    fewer.add_metric(["tenant-1"], 1)
    collector.families = [fewer, RowFamily("rows", "Rows.", "gauge", ["user"])]
    write_latest(registry)
    assert list(exposition._WRITERS[registry]._last) == [("queue_length", ("user", "tenant-1"))]


def test_a_row_family_lists_the_samples_a_library_family_would() -> None:
    rows = RowFamily("requests_total", "Requests.", "counter", ["user", "priority"])
    library = CounterMetricFamily("requests_total", "Requests.", labels=["user", "priority"])
    for values, value in ((("b", "0"), 2), (("a", "5"), 1.5)):
        rows.add_metric(values, value)
        library.add_metric(list(values), value)
    assert rows == library
    assert rows.samples == [
        Sample("requests_total", {"user": "b", "priority": "0"}, 2),
        Sample("requests_total", {"user": "a", "priority": "5"}, 1.5),
    ]
    registry, _ = registry_of(rows)
    assert registry.get_sample_value("requests_total", {"user": "a", "priority": "5"}) == 1.5


def test_a_row_with_the_wrong_number_of_label_values_is_refused_naming_the_family() -> None:
    rows = RowFamily("queue_length", "Queued.", "gauge", ["user", "priority"])
    with pytest.raises(ValueError, match="queue_length: 2 label values expected"):
        rows.add_metric(["a"], 1)
    assert rows.rows == []


def test_a_row_familys_samples_cannot_be_replaced() -> None:
    rows = RowFamily("queue_length", "Queued.", "gauge")
    with pytest.raises(TypeError, match="add_metric"):
        rows.samples = [Sample("queue_length", {}, 1)]


def test_a_value_the_format_cannot_write_fails_as_generate_latest_fails() -> None:
    bad = GaugeMetricFamily("queue_length", "Queued.", labels=["user"])
    bad.add_metric([3], 1)  # type: ignore[list-item]
    registry, _ = registry_of(bad)
    with pytest.raises(AttributeError) as ours:
        write_latest(registry)
    with pytest.raises(AttributeError) as theirs:
        generate_latest(registry)
    assert ours.value.args == theirs.value.args
    assert ours.value.args[-1] is bad


def test_nan_and_infinities_are_spelled_as_go_spells_them() -> None:
    rows = RowFamily("v", "V.", "gauge", ["k"])
    for key, value in (("nan", math.nan), ("inf", math.inf), ("ninf", -math.inf), ("big", 1e22)):
        rows.add_metric([key], value)
    registry, _ = registry_of(rows)
    assert write_latest(registry).decode().splitlines()[2:] == [
        'v{k="nan"} NaN',
        'v{k="inf"} +Inf',
        'v{k="ninf"} -Inf',
        'v{k="big"} 1e+22',
    ]
