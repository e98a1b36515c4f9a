"""One exception per way a config-store service call can fail.

Views map them to HTTP: `ConfigValidationError` → 400 with field paths,
`VersionConflict` → 412 (If-Match failed), `NotFound` → 404. A database
that does not answer is none of these: `DATABASE_UNREACHABLE` names the
errors every door answers 503 (or the websocket's 4503) for.

SQLite raises OperationalError for a statement the database cannot run
("no such table: …" when the file was deleted or replaced under a running
server, a syntax error) as well as for a busy or failing database. Those are
a schema fault or a bug, PostgreSQL's ProgrammingError: every SQLite
connection re-raises them as such (`classify_sqlite_faults`, connected to
`connection_created` when the app is ready), so they are a 500 in the log at every door,
not a "try again" that would never succeed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from django.db import DatabaseError, InterfaceError, OperationalError, ProgrammingError
from django.db.backends.base.base import BaseDatabaseWrapper

from scheduler_core.errors import FieldError

__all__ = [
    "DATABASE_DOWN_RETRY_SECONDS",
    "DATABASE_UNREACHABLE",
    "ConfigStoreError",
    "ConfigValidationError",
    "NotFound",
    "VersionConflict",
    "classify_sqlite_faults",
    "sqlite_statement_faults_are_programming_errors",
]

# The database is down or refusing connections (not a bug in a query).
DATABASE_UNREACHABLE = (OperationalError, InterfaceError)
# How long a client is asked to wait when the database did not answer.
DATABASE_DOWN_RETRY_SECONDS = 5


def sqlite_statement_faults_are_programming_errors(
    execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]
) -> Any:
    """A Django execute wrapper: SQLite's faults no retry mends stop being OperationalError.

    SQLITE_ERROR is the statement's own fault (no such table or column, bad
    syntax): ProgrammingError. SQLITE_READONLY (a database file or folder the
    server may not write, a file moved under it) stays until an operator
    changes it: a plain DatabaseError, so a write answers 500, not a 503
    saying the database "did not answer". Busy, locked, I/O, full and
    can't-open have codes of their own and stay OperationalError, which is
    worth retrying. (A file that is no database, or a corrupt one, is
    already a plain DatabaseError.) Extended codes are compared by their
    primary code, the low byte.
    """
    try:
        return execute(sql, params, many, context)
    except OperationalError as exc:
        cause = exc.__cause__
        code = (
            getattr(cause, "sqlite_errorcode", None) if isinstance(cause, sqlite3.Error) else None
        )
        if code is not None and code & 0xFF == sqlite3.SQLITE_ERROR:
            raise ProgrammingError(*exc.args) from cause
        if code is not None and code & 0xFF == sqlite3.SQLITE_READONLY:
            raise DatabaseError(*exc.args) from cause
        raise


def classify_sqlite_faults(connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    """On `connection_created` (connected in `api.apps`): wrap a SQLite connection's statements."""
    wrappers = connection.execute_wrappers
    # The list outlives reconnections: install the wrapper once per connection object.
    if (
        connection.vendor == "sqlite"
        and sqlite_statement_faults_are_programming_errors not in wrappers
    ):
        wrappers.insert(0, sqlite_statement_faults_are_programming_errors)


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
