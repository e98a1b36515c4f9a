"""The drain at shutdown: `SchedulerRuntime.stop` and what it fails the leftovers with.

`SchedulerRuntime` (runtime.py) inherits `stop` from `RuntimeDrain`. It runs
once per process, so it lives apart from the per-request paths; the one
piece of the drain those paths keep is `SchedulerRuntime._note_if_empty`,
which sets the event `stop` waits on, since it runs on every completion.
`SHUTTING_DOWN` is public as `scheduler_core.runtime.SHUTTING_DOWN`.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Protocol

from scheduler_core.model import Request
from scheduler_core.queue import RequestQueue

__all__ = ["SHUTTING_DOWN", "RuntimeDrain"]

# What every request still queued or running at the drain deadline fails with.
SHUTTING_DOWN = "scheduler shutting down"


class _Runtime(Protocol):
    """The part of `SchedulerRuntime` the drain reads and changes."""

    queue: RequestQueue
    _handed: dict[tuple[str, int], Request]
    _cancellations: dict[str, asyncio.Future[None]]
    _emptied: asyncio.Event
    _tasks: list[asyncio.Task[None]]
    _stopping: bool

    def _notify(self, hook: str, *args: Any) -> None: ...


class RuntimeDrain:
    """`stop` for `SchedulerRuntime`, which holds the state it works on."""

    async def stop(self: _Runtime, *, drain_timeout: float = 30.0) -> list[Request]:
        """Stop accepting, let queriers drain the queue and finish, fail what is left.

        Waits until nothing is queued or running, up to `drain_timeout`.
        Returns the requests still queued or running at the deadline, queued
        ones first; each was released from its worker (whose transport is
        told through `cancellation`, as for a cancel) and reported to the
        observer as failed with `SHUTTING_DOWN`, so every frontend gets an
        answer and nothing is silently dropped. A result arriving later for
        a running one finds it gone and is dropped.
        """
        self._stopping = True
        if len(self.queue) or self.queue.in_flight_count():
            self._emptied.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._emptied.wait(), drain_timeout)
        leftovers = self.queue.drain() + _release_running(self)
        for request in leftovers:
            self._notify("on_failed", request, SHUTTING_DOWN)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        return leftovers


def _release_running(runtime: _Runtime) -> list[Request]:
    """Take every in-flight request off its worker, for stop to fail it."""
    handed = {id(request): key for key, request in runtime._handed.items()}
    running = []
    for request in runtime.queue.in_flight_requests():
        runtime.queue.cancel(request.id)
        key = handed.get(id(request))
        if key is not None:
            # Handed to a wait that never resumed: no querier ran it.
            del runtime._handed[key]
            request.attempts -= 1
        cancelled = runtime._cancellations.pop(request.id, None)
        if cancelled is not None and not cancelled.done():
            cancelled.set_result(None)
        running.append(request)
    return running
