"""Whether the database's schema is behind this code's migrations.

Two places refuse to run against such a database, each saying which
migrations to apply: the server at start-up (`config.serve`) and the
management commands that touch the database (`@database_command`).
"""

from __future__ import annotations

from django.db import connection
from django.db.migrations.executor import MigrationExecutor

__all__ = ["behind_message", "unapplied_migrations"]

# Named in the message; the rest are counted.
_SHOWN = 5


def unapplied_migrations() -> list[str]:
    """The migrations the database lacks, as `app.name`, in the order they would run."""
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _ in plan]


def behind_message(missing: list[str], then: str) -> str:
    """The one line saying the schema is behind: which migrations, and what to do `then`."""
    more = len(missing) - _SHOWN
    shown = ", ".join(missing[:_SHOWN]) + (f" and {more} more" if more > 0 else "")
    return (
        f"the database is behind this code: {len(missing)} migration(s) not applied "
        f"({shown}); run `python manage.py migrate` against it, then {then}"
    )
