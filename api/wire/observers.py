"""Fanning the runtime's one observer slot out to everything that watches it.

`SchedulerRuntime` reports to one observer. The service hangs a
`FanOutObserver` there (api.wire.runtime_host), and each part that needs the
hooks (metrics, stats, the gRPC door's registries, tests) adds itself.
The admission log reports here too (`on_refused`): a request a rejection
rule refused never reaches the runtime, but its tenant was active.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from scheduler_core.model import Request
from scheduler_core.runtime import SchedulerRuntime

__all__ = ["HOOKS", "FanOutObserver", "install_observer"]

log = logging.getLogger(__name__)

HOOKS = (
    "on_enqueued",
    "on_rejected",
    "on_dispatched",
    "on_completed",
    "on_cancelled",
    "on_failed",
    "on_refused",
    "on_interrupted",
)


class FanOutObserver:
    """The runtime's observer: forwards each hook to every added observer.

    `on_failed` first goes to `request.payload.on_failed` when the payload
    has one: that is how transports learn that a request they own failed
    (a querier vanished twice, or shutdown drained it). Each call is isolated
    so one broken observer cannot starve the others.
    """

    def __init__(self) -> None:
        self._observers: list[Any] = []
        self._calls: dict[str, list[Callable[..., None]]] = {hook: [] for hook in HOOKS}

    @property
    def observers(self) -> tuple[Any, ...]:
        """Every observer added, in order."""
        return tuple(self._observers)

    def add(self, observer: Any) -> None:
        if observer in self._observers:
            return
        self._observers.append(observer)
        for hook in HOOKS:
            method = getattr(observer, hook, None)
            if method is not None:
                self._calls[hook].append(method)

    def _emit(self, hook: str, *args: Any) -> None:
        for method in self._calls[hook]:
            try:
                method(*args)
            except Exception:
                log.exception("observer %r failed in %s", method, hook)

    def on_enqueued(self, request: Request) -> None:
        self._emit("on_enqueued", request)

    def on_rejected(self, request: Request, reason: str) -> None:
        self._emit("on_rejected", request, reason)

    def on_dispatched(self, request: Request, querier_id: str, worker_id: int, wait: float) -> None:
        self._emit("on_dispatched", request, querier_id, worker_id, wait)

    def on_completed(self, request: Request) -> None:
        self._emit("on_completed", request)

    def on_cancelled(self, request: Request) -> None:
        self._emit("on_cancelled", request)

    def on_interrupted(self, request: Request) -> None:
        self._emit("on_interrupted", request)

    def on_refused(self, tenant_id: str) -> None:
        """A request of `tenant_id` refused by a rejection rule at admission.

        Not a runtime event (the runtime never sees such a request): the
        admission log reports it here (api.wire.runtime_host).
        """
        self._emit("on_refused", tenant_id)

    def on_failed(self, request: Request, reason: str) -> None:
        deliver = getattr(request.payload, "on_failed", None)
        if deliver is not None:
            try:
                deliver(request, reason)
            except Exception:
                log.exception("reply handle of %s failed to deliver a failure", request.id)
        self._emit("on_failed", request, reason)


def install_observer(runtime: SchedulerRuntime, observer: Any) -> None:
    """Add an observer without displacing the one the runtime already has.

    A runtime without a fan-out (a bare one, as in the gRPC tests and the
    benchmark's scheduler process) gets one, holding what it had first.
    """
    current = runtime.observer
    if not isinstance(current, FanOutObserver):
        fan = FanOutObserver()
        if current is not None:
            fan.add(current)
        runtime.observer = current = fan
    current.add(observer)
