"""The import worker process's initializer (see `api.offload`).

Its own module because a spawned worker imports the initializer's module
before Django is set up, and `api.offload` imports DRF and the models; this
one imports nothing of the project at module level.
"""

from __future__ import annotations

import os

__all__ = ["worker_init"]


def worker_init(database_name: str) -> None:
    """Django on the parent's database: its effective NAME (tests rename it)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    from django.conf import settings
    from django.db import connection

    django.setup()
    settings.DATABASES["default"]["NAME"] = database_name
    connection.settings_dict["NAME"] = database_name
