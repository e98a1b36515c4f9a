"""What a management command says when the database cannot do its part.

An operator who runs `issue_token` (or any command that writes) against a
database that was never migrated, is down, or is held locked by another
writer got a page of traceback ending in `no such table: api_apitoken` or
`database is locked`. `@database_command` on a command's `handle` turns any
database error into one CommandError line (exit 1): the migrations to run
when the schema is behind the code, else what the database said. It must
sit outside `transaction.atomic`, so the transaction has been rolled back
(and its connection is usable again) when the schema is checked.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from api.store.schema_state import behind_message, unapplied_migrations

__all__ = ["database_command", "database_problem"]

Handle = TypeVar("Handle", bound=Callable[..., Any])


def database_problem(exc: DatabaseError) -> str:
    """One line saying why the database failed the command, and what to do."""
    try:
        missing = unapplied_migrations()
    except DatabaseError:
        missing = []  # it cannot even say which migrations it has: not a schema problem
    if missing:
        return behind_message(missing, "try again")
    # Drivers' messages run over several lines (psycopg adds a hint line).
    detail = " ".join(str(exc).split()) or type(exc).__name__
    return f"the database failed: {detail}"


def database_command(handle: Handle) -> Handle:
    """Decorate a command's `handle`: a database error becomes one CommandError line."""

    @functools.wraps(handle)
    def wrapper(self: BaseCommand, *args: Any, **options: Any) -> Any:
        try:
            return handle(self, *args, **options)
        except DatabaseError as exc:
            raise CommandError(database_problem(exc)) from None

    return wrapper  # type: ignore[return-value]
