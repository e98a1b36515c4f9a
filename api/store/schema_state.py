"""Whether the database's schema is behind this code's migrations, or ahead of them.

Two places refuse to run against a database behind the code, each saying
which migrations to apply: the server at start-up (`config.serve`) and the
management commands that touch the database (`@database_command`). One
ahead (a newer version migrated it: a downgrade) is only warned of at
start-up (`ahead_message`), as a newer version's migration may well suit
this one.
"""

from __future__ import annotations

import re

from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader

__all__ = ["ahead_message", "behind_message", "unapplied_migrations", "unknown_migrations"]

# Named in the message; the rest are counted.
_SHOWN = 5


def unapplied_migrations() -> list[str]:
    """The migrations the database lacks, as `app.name`, in the order they would run."""
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _ in plan]


def unknown_migrations() -> list[str]:
    """The migrations the database has applied that come after all of this code's, as `app.name`.

    Only those numbered past every migration this code has for the app: a
    squash, once its old migrations are deleted, leaves their names applied
    in the database, and those are behind the code, not ahead of it.
    """
    loader = MigrationLoader(connection)
    newest: dict[str, int] = {}
    for app, name in loader.disk_migrations:
        newest[app] = max(newest.get(app, 0), *_numbers(name))
    return sorted(
        f"{app}.{name}"
        for app, name in loader.applied_migrations
        if app in newest
        and (app, name) not in loader.disk_migrations
        and max(_numbers(name)) > newest[app]
    )


def _numbers(name: str) -> list[int]:
    """The migration numbers a name holds: "0007_x" 7, "0001_squashed_0005_x" 1 and 5."""
    return [int(n) for n in re.findall(r"(?:^|_)(\d{4})(?=_|$)", name)] or [0]


def ahead_message(unknown: list[str]) -> str:
    """The one line saying a newer version migrated the database, and how to go back."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    apps = sorted({name.split(".", 1)[0] for name in unknown})
    back = "; ".join(
        f"`python manage.py migrate {app} {name}`"
        for app in apps
        for _, name in loader.graph.leaf_nodes(app)
    )
    return (
        f"the database is ahead of this code: {len(unknown)} migration(s) applied that it "
        f"does not have ({_shown(unknown)}), so a newer version migrated it. Run that "
        f"version, or, to stay on this one, migrate back with the newer one first: {back}"
    )


def _shown(names: list[str]) -> str:
    more = len(names) - _SHOWN
    return ", ".join(names[:_SHOWN]) + (f" and {more} more" if more > 0 else "")


def behind_message(missing: list[str], then: str) -> str:
    """The one line saying the schema is behind: which migrations, and what to do `then`."""
    return (
        f"the database is behind this code: {len(missing)} migration(s) not applied "
        f"({_shown(missing)}); run `python manage.py migrate` against it, then {then}"
    )
