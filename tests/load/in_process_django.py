"""Django for the in-process benchmarks: settings, a throwaway migrated SQLite, quiet logs."""

from __future__ import annotations

import os
import tempfile

__all__ = ["setup_django"]


def setup_django(prefix: str) -> None:
    """Configure Django on a fresh database under a temp folder named `prefix`.

    Called before anything imports Django models (the benchmarks import
    the project's modules inside their functions for that reason).
    """
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    database = os.path.join(tempfile.mkdtemp(prefix=prefix), "db.sqlite3")
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
