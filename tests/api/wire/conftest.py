"""Fixtures shared by the wire tests."""

from __future__ import annotations

import pytest

from api.wire import metrics
from tests.fakes import FakeClock


@pytest.fixture
def janitor_clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """The tenant-series janitor (`metrics.JANITOR`) on a fake clock, at 1000 s."""
    clock = FakeClock(1000.0)
    monkeypatch.setattr(metrics.JANITOR, "_clock", clock)
    return clock
