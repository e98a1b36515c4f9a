"""Cached label children count like labels() and survive series removal."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.exposition import generate_latest

from api.wire.metrics import LabelChildren


def exported(registry: CollectorRegistry) -> str:
    return generate_latest(registry).decode()


def test_a_cached_child_is_the_metrics_own_and_counts_into_its_series() -> None:
    registry = CollectorRegistry()
    counter = Counter("events", "e", ["user", "priority"], registry=registry)
    children = LabelChildren(counter)

    children.get("t", "0").inc()
    children.get("t", "0").inc()

    assert children.get("t", "0") is counter.labels("t", "0")
    assert 'events_total{priority="0",user="t"} 2.0' in exported(registry)


def test_a_removed_series_is_made_anew_by_the_next_event_not_fed_through_the_old_child() -> None:
    registry = CollectorRegistry()
    counter = Counter("events", "e", ["user", "priority"], registry=registry)
    children = LabelChildren(counter)
    children.get("t", "0").inc(5)

    counter.remove("t", "0")
    assert 'user="t"' not in exported(registry)
    children.get("t", "0").inc()

    assert 'events_total{priority="0",user="t"} 1.0' in exported(registry)


def test_the_cache_starts_over_at_its_limit_and_keeps_counting() -> None:
    registry = CollectorRegistry()
    counter = Counter("events", "e", ["user"], registry=registry)
    children = LabelChildren(counter, limit=2)

    for tenant in ("a", "b", "c", "a"):
        children.get(tenant).inc()

    text = exported(registry)
    assert 'events_total{user="a"} 2.0' in text and 'events_total{user="c"} 1.0' in text
