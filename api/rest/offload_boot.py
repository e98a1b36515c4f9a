"""The import worker process's initializer (see `api.rest.offload`).

Its own module because a spawned worker imports the initializer's module
before Django is set up, and `api.rest.offload` imports DRF and the models; this
one imports nothing of the project at module level.

The worker must not outlive the server. A `kill -9` of the server runs no
cleanup, and the worker would otherwise wait on its call queue forever (it
holds that pipe's write end itself, so it never sees EOF), keeping
multiprocessing's resource tracker alive with it (the tracker exits when
the last holder of its pipe does). Two guards, either enough alone: on
Linux the kernel's parent-death signal (`prctl(PR_SET_PDEATHSIG)`), and
everywhere a watchdog thread that exits once the parent pid changes (the
worker was re-parented to init or a subreaper).

Nor may it end before the server: a terminal's Ctrl-C signals the whole
foreground process group, workers included, and each printed a
`KeyboardInterrupt` traceback of its own while the server shut down
cleanly. A worker ignores SIGINT; the server's shutdown (or its death)
ends it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

__all__ = [
    "PARENT_POLL_SECONDS",
    "WORKER_NICENESS",
    "exit_with_parent",
    "parent_death_signal",
    "worker_init",
]

# How often the watchdog looks at the parent pid: the bound on how long an
# orphaned worker lives where the parent-death signal is not available.
PARENT_POLL_SECONDS = 0.5
_PR_SET_PDEATHSIG = 1

# A separate GIL is not enough on a small machine: the worker's busy core is
# one the scheduler and its clients also want. Imports tolerate seconds
# (target < 5 s for 1,000 tenants) while dispatch does not, so the worker
# yields the CPU whenever the server process wants it.
WORKER_NICENESS = 10


def parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Ask Linux to send `sig` when the parent dies; False where unsupported.

    The kernel sends it when the *thread* that started this process exits,
    so `api.rest.offload` starts workers from one long-lived thread.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent_pid: int, interval: float) -> None:
    while os.getppid() == parent_pid:
        time.sleep(interval)
    # No cleanup to run: an open transaction rolls back when the connection
    # drops, and nobody is left to answer.
    os._exit(1)


def exit_with_parent(parent_pid: int, interval: float = PARENT_POLL_SECONDS) -> None:
    """End this process when `parent_pid` stops being its parent (both guards),
    and not on a Ctrl-C meant for the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent_death_signal()
    if os.getppid() != parent_pid:  # died before the signal was armed
        os._exit(1)
    watchdog = threading.Thread(
        target=_watch_parent, args=(parent_pid, interval), name="parent-watchdog", daemon=True
    )
    watchdog.start()


def worker_init(database_name: str, parent_pid: int | None = None) -> None:
    """Django on the parent's database: its effective NAME (tests rename it)."""
    if parent_pid is not None:
        exit_with_parent(parent_pid)
    os.nice(WORKER_NICENESS)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    from django.conf import settings
    from django.db import connection

    django.setup()
    settings.DATABASES["default"]["NAME"] = database_name
    connection.settings_dict["NAME"] = database_name
