"""A broadcaster installed as the process's for one test, and removed after it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from dashboard import live
from dashboard.live import Broadcaster


@contextmanager
def installed(instance: Broadcaster) -> Iterator[Broadcaster]:
    live.install_broadcaster(instance)
    try:
        yield instance
    finally:
        live.install_broadcaster(None)
