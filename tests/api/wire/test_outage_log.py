"""A retrying loop says one traceback per outage, then a reminder a minute, then recovery."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from channels.db import database_sync_to_async

from api.store import selectors
from api.wire.outage_log import OutageLog


def test_a_minute_of_retries_logs_one_traceback_one_reminder_and_the_recovery(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    outage = OutageLog(logging.getLogger("t"), "the receive", clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="t"):
        for second in range(61):
            now[0] = float(second)
            outage.failed(ConnectionError("redis gone"))
        outage.worked()
        outage.worked()
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "the receive failed; retrying every second",
        "the receive still failing after 60 s (61 tries): redis gone",
        "the receive works again after 60 s (61 failed tries)",
    ]
    assert caplog.records[0].exc_info is not None
    assert caplog.records[1].exc_info is None


def test_a_second_outage_logs_its_traceback_again(caplog: pytest.LogCaptureFixture) -> None:
    outage = OutageLog(logging.getLogger("t"), "the receive", clock=lambda: 0.0)
    with caplog.at_level(logging.WARNING, logger="t"):
        outage.failed(ConnectionError("one"))
        outage.worked()
        outage.failed(ConnectionError("two"))
    assert [r.exc_info is not None for r in caplog.records] == [True, True]


async def test_a_config_applied_here_whose_announce_fails_is_a_warning_not_a_dead_task(
    host: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def redis_down(version: int) -> None:
        raise ConnectionError("redis gone")

    monkeypatch.setattr(host._group, "announce_config", redis_down)
    with caplog.at_level(logging.WARNING):
        await host._broadcast(await database_sync_to_async(selectors.config_version_get)())
    assert any("they apply it at their next reconcile" in r.getMessage() for r in caplog.records)
    assert not any(r.levelno >= logging.ERROR for r in caplog.records)


def test_a_loop_that_waits_longer_than_a_second_says_when_it_tries_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    outage = OutageLog(logging.getLogger("t"), "the join", retrying="every 5 s")
    with caplog.at_level(logging.WARNING, logger="t"):
        outage.failed(ConnectionError("gone"))
        outage.failed(ConnectionError("gone"))
    assert [r.getMessage() for r in caplog.records] == ["the join failed; retrying every 5 s"]
