"""One exception per way a config-store service call can fail.

Views map them to HTTP: `ConfigValidationError` → 400 with field paths,
`VersionConflict` → 412 (If-Match failed), `NotFound` → 404. A database
that does not answer is none of these: `DATABASE_UNREACHABLE` names the
errors every door answers 503 (or the websocket's 1013) for.
"""

from __future__ import annotations

from django.db import InterfaceError, OperationalError

from scheduler_core.errors import FieldError

__all__ = [
    "DATABASE_DOWN_RETRY_SECONDS",
    "DATABASE_UNREACHABLE",
    "ConfigStoreError",
    "ConfigValidationError",
    "NotFound",
    "VersionConflict",
]

# The database is down or refusing connections (not a bug in a query).
DATABASE_UNREACHABLE = (OperationalError, InterfaceError)
# How long a client is asked to wait when the database did not answer.
DATABASE_DOWN_RETRY_SECONDS = 5


class ConfigStoreError(Exception):
    """Base class of the config store's deliberate failures."""


class ConfigValidationError(ConfigStoreError):
    """The change is invalid; nothing was written."""

    def __init__(self, errors: list[FieldError]) -> None:
        super().__init__("; ".join(f"{e.path}: {e.message}" for e in errors))
        self.errors = errors


class VersionConflict(ConfigStoreError):
    """The caller's expected version is not the current one.

    `current_version` is None when the object does not exist (any more).
    """

    def __init__(self, current_version: int | None) -> None:
        if current_version is None:
            message = "version conflict: the object does not exist"
        else:
            message = f"version conflict: the current version is {current_version}"
        super().__init__(message)
        self.current_version = current_version


class NotFound(ConfigStoreError):
    """No such tenant or revision."""
