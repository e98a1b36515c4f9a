"""One exception per way a config-store service call can fail.

Views map them to HTTP: `ConfigValidationError` → 400 with field paths,
`VersionConflict` → 412 (If-Match failed), `NotFound` → 404.
"""

from __future__ import annotations

from scheduler_core.errors import FieldError

__all__ = ["ConfigStoreError", "ConfigValidationError", "NotFound", "VersionConflict"]


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
