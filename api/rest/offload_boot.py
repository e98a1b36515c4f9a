"""The import worker process's initializer (see `api.rest.offload`).

Its own module because a spawned worker imports the initializer's module
before Django is set up, and `api.rest.offload` imports DRF and the models; this
one imports nothing of the project at module level.
"""

from __future__ import annotations

import os

__all__ = ["WORKER_NICENESS", "worker_init"]

# A separate GIL is not enough on a small machine: the worker's busy core is
# one the scheduler and its clients also want. Imports tolerate seconds
# (target < 5 s for 1,000 tenants) while dispatch does not, so the worker
# yields the CPU whenever the server process wants it.
WORKER_NICENESS = 10


def worker_init(database_name: str) -> None:
    """Django on the parent's database: its effective NAME (tests rename it)."""
    os.nice(WORKER_NICENESS)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    from django.conf import settings
    from django.db import connection

    django.setup()
    settings.DATABASES["default"]["NAME"] = database_name
    connection.settings_dict["NAME"] = database_name
