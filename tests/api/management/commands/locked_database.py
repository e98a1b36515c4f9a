"""A real `manage.py` command stopped while its INSERT waits on a locked SQLite database.

What an operator meets when another writer holds the lock (a migration, a
config write, an admin save): the command's INSERT waits in SQLite's busy
handler, Ctrl-C arrives, and SQLite still finishes the INSERT once the lock
is free, before Python can raise KeyboardInterrupt. The tests hold the
lock themselves (BEGIN IMMEDIATE), so the signal lands there every time.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from loadgen.daphne_process import BASE_DIR, _migrated_sqlite
from tests.processes import ctrl_c_as_from_a_terminal

__all__ = ["interrupted_while_writing", "migrated_database"]

DEADLINE = 60.0
# How long the command's INSERT is left waiting before the signal, once it
# has opened the database: it is in SQLite's busy handler well before
# (which waits up to the settings' 20 s).
WAITING = 1.0


def migrated_database(folder: Path) -> tuple[dict[str, str], Path]:
    """(environment for manage.py, database path): a migrated SQLite database in `folder`."""
    path = folder / "db.sqlite3"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"sqlite:///{path}",
        "VAR_DIR": str(folder / "var"),
    }
    source = contextlib.closing(sqlite3.connect(_migrated_sqlite(env)))
    with source as template, contextlib.closing(sqlite3.connect(path)) as copy:
        template.backup(copy)
        # As the settings' connections set it: a connection changing the
        # journal mode would wait on the lock before its INSERT, not in it.
        copy.execute("PRAGMA journal_mode=WAL")
    return env, path


def interrupted_while_writing(
    args: list[str], env: dict[str, str], path: Path, signum: int = signal.SIGINT
) -> subprocess.CompletedProcess[str]:
    """`manage.py ARGS` sent `signum` while its first write waits on `path`'s write lock.

    The lock is released just after the signal, so the write then goes through.
    """
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as holder:
        holder.execute("BEGIN IMMEDIATE")
        command = subprocess.Popen(
            ctrl_c_as_from_a_terminal([sys.executable, str(BASE_DIR / "manage.py"), *args]),
            env=env, cwd=BASE_DIR, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + DEADLINE
            while not _has_open(command.pid, path):
                assert command.poll() is None, command.communicate()
                assert time.monotonic() < deadline, "the command never opened its database"
                time.sleep(0.05)
            time.sleep(WAITING)
            assert command.poll() is None, command.communicate()
            command.send_signal(signum)
            time.sleep(0.5)
            holder.execute("COMMIT")
            stdout, stderr = command.communicate(timeout=DEADLINE)
        finally:
            if command.poll() is None:
                command.kill()
                command.wait()
    return subprocess.CompletedProcess(command.args, command.returncode, stdout, stderr)


def _has_open(pid: int, path: Path) -> bool:
    """Whether process `pid` has the file `path` open (Linux /proc)."""
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path.resolve()):
                    return True
    return False
