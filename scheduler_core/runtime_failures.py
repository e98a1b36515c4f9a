"""Ending requests as failed while their frontend still waits: `RuntimeFailures`.

`SchedulerRuntime` (runtime.py) inherits `fail`, `fail_matching` and
`fail_unanswered` from it, as it inherits `stop` from `RuntimeDrain`. Each
ends a request exactly once through the observer's `on_failed`, with a
reason observers tell by its type (`CancelReason` for an operator's cancel,
`QuerierNoResult` for a querier done without a result), so the frontend is
told why; a cancel by the frontend itself is `SchedulerRuntime.cancel`.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from scheduler_core.model import CancelReason, QuerierNoResult, Request
from scheduler_core.queue import RequestQueue

__all__ = ["RuntimeFailures"]


class _Runtime(Protocol):
    """The part of `SchedulerRuntime` the failures read and change."""

    queue: RequestQueue
    _cancellations: dict[str, asyncio.Future[None]]

    def _notify(self, hook: str, *args: Any) -> None: ...

    def _note_if_empty(self) -> None: ...


class RuntimeFailures:
    """`fail`, `fail_matching` and `fail_unanswered` for `SchedulerRuntime`."""

    def fail(self: _Runtime, request_id: str, reason: str) -> Request | None:
        """End a queued or in-flight request as failed with `reason` (an operator's cancel).

        Unlike `cancel` (its frontend gave up), the frontend still waits, so
        it is told through `on_failed`; a running request's querier
        transport is told through `cancellation`, as for a cancel.
        """
        request = self.queue.cancel(request_id)
        if request is not None:
            _fail_removed(self, request, CancelReason(reason))
        return request

    def fail_matching(self: _Runtime, reason: str, **node: Any) -> list[Request]:
        """`fail` every queued request `RequestQueue.cancel_matching(**node)` matches."""
        requests = self.queue.cancel_matching(**node)
        cancel = CancelReason(reason)
        for request in requests:
            _fail_removed(self, request, cancel)
        return requests

    def fail_unanswered(self: _Runtime, request_id: str, querier_id: str) -> Request | None:
        """The querier is done with the request but its result never reached the
        frontend (the transport knows); its worker is free again, and the
        request fails back with a `QuerierNoResult` instead of completing."""
        self._cancellations.pop(request_id, None)
        request = self.queue.complete(request_id)
        if request is not None:
            reason = f"querier {querier_id} finished the request without sending its result"
            self._notify("on_failed", request, QuerierNoResult(reason))
            self._note_if_empty()
        return request


def _fail_removed(runtime: _Runtime, request: Request, reason: CancelReason) -> None:
    cancelled = runtime._cancellations.pop(request.id, None)
    if cancelled is not None and not cancelled.done():
        cancelled.set_result(None)
    runtime._notify("on_failed", request, reason)
    runtime._note_if_empty()
