"""Fakes shared by the test directories: a hand-moved clock, a queue on it,
and a runtime host with no frontends connected.

Time passes only where a test sets `clock.now`, so orders, ages and
expiries are exact and no test sleeps.
"""

from __future__ import annotations

from typing import Any

from scheduler_core.model import QueueConfig
from scheduler_core.queue import RequestQueue

__all__ = ["BareHost", "FakeClock", "clocked_queue"]


class FakeClock:
    """A clock that stands still until a test moves `now`."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def clocked_queue(now: float = 0.0, **config: Any) -> tuple[RequestQueue, FakeClock]:
    """A queue with `QueueConfig(**config)` on its own fake clock, starting at `now`."""
    clock = FakeClock(now)
    return RequestQueue(QueueConfig(**config), clock=clock), clock


class BareHost:
    """What the queue views read of a runtime host: its runtime, and no frontends."""

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime

    def frontends(self) -> list[Any]:
        return []
