"""One small exception per way a scheduling call can fail."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ConfigInvalid",
    "DuplicateRequest",
    "FieldError",
    "QuerierShuttingDown",
    "SchedulerError",
    "SchedulerStopping",
    "TooManyRequests",
    "UnknownQuerier",
    "WorkerBusy",
]


class SchedulerError(Exception):
    """Base class of every error the scheduler raises on purpose."""


class TooManyRequests(SchedulerError):
    """The tenant already has its maximum of outstanding requests (HTTP 429)."""

    def __init__(self, tenant_id: str = "") -> None:
        super().__init__("too many outstanding requests")
        self.tenant_id = tenant_id


class QuerierShuttingDown(SchedulerError):
    """The querier said it is shutting down, so it gets no more work."""


class UnknownQuerier(SchedulerError):
    """The querier or worker id is not connected."""


class WorkerBusy(SchedulerError):
    """The worker asked for work while it still has a request in flight."""


class DuplicateRequest(SchedulerError):
    """A request with this id is already queued or in flight."""


class SchedulerStopping(SchedulerError):
    """The scheduler is shutting down and accepts no new requests."""


@dataclass(frozen=True, slots=True)
class FieldError:
    """One validation problem: the dotted field path and what is wrong."""

    path: str
    message: str


class ConfigInvalid(SchedulerError):
    """A tenant or scheduler config failed validation; nothing was applied."""

    def __init__(self, errors: list[FieldError]) -> None:
        super().__init__("; ".join(f"{e.path}: {e.message}" for e in errors))
        self.errors = errors
