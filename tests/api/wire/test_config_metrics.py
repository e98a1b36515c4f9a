"""The config version gauge and the reconcile record's failure counter and success time."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from api.wire.config_metrics import ConfigVersionCollector, ReconcileRecord
from tests.fakes import FakeClock


def scrape(version: int | None, record: ReconcileRecord | None) -> dict[str, float]:
    registry = CollectorRegistry()
    registry.register(ConfigVersionCollector(lambda: version, lambda: record))
    text = generate_latest(registry).decode()
    return {
        line.split()[0]: float(line.split()[1])
        for line in text.splitlines()
        if line and not line.startswith("#")
    }


def test_a_success_stamps_the_clocks_time_and_a_failure_counts_and_propagates() -> None:
    clock = FakeClock(1_700_000_000.0)
    record = ReconcileRecord(clock)
    with record.attempt():
        pass
    assert (record.failures, record.last_success) == (0, 1_700_000_000.0)
    clock.now += 60
    for _ in range(2):
        with pytest.raises(OSError), record.attempt():
            raise OSError("database unreachable")
    assert (record.failures, record.last_success) == (2, 1_700_000_000.0)
    clock.now += 5
    with record.attempt():
        pass
    assert (record.failures, record.last_success) == (2, 1_700_000_065.0)


def test_a_reconcile_cancelled_by_the_hosts_stop_is_neither_a_failure_nor_a_success() -> None:
    record = ReconcileRecord(FakeClock(10.0))
    with pytest.raises(asyncio.CancelledError), record.attempt():
        raise asyncio.CancelledError
    assert (record.failures, record.last_success) == (0, None)


def test_the_scrape_has_the_failures_and_the_last_success_time() -> None:
    clock = FakeClock(1_700_000_000.0)
    record = ReconcileRecord(clock)
    with record.attempt():
        pass
    with pytest.raises(RuntimeError), record.attempt():
        raise RuntimeError("apply failed")
    assert scrape(7, record) == {
        "queue_inspector_config_version": 7.0,
        "queue_inspector_config_reconcile_failures_total": 1.0,
        "queue_inspector_config_last_reconcile_success_timestamp_seconds": 1_700_000_000.0,
    }


def test_before_the_first_success_there_is_no_time_to_read_as_stale() -> None:
    # A 0 would read as 1970: the stale alert would fire at once.
    assert scrape(None, None) == {"queue_inspector_config_reconcile_failures_total": 0.0}
    assert scrape(None, ReconcileRecord(FakeClock())) == {
        "queue_inspector_config_reconcile_failures_total": 0.0
    }
