"""Waiting in tests for what another task or thread does on the event loop.

`until` polls a condition the code under test makes true later (a task it
spawned, a database write heard after commit, a signal handled), failing
with a clear message at the timeout instead of hanging.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

__all__ = ["until"]


async def until(predicate: Callable[[], Any], timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "condition never became true"
        await asyncio.sleep(0.01)
