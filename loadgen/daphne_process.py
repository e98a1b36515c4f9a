"""A real Daphne server in a child process, on a free loopback port and its own DB.

Used by the service tests (tests/conftest.py's `daphne_server` fixture) and
by `manage.py loadtest`: each gets a private temp directory holding the
SQLite database (migrated before start) and the VAR_DIR, so nothing touches
the developer's data. Management commands run against the same database
through `manage()`, which is also how tests change config behind the
server's back (the server sees it through its reconcile-by-version loop).
`run_python()` runs code in one long-lived Django process per server (a
`manage.py` process costs a second of start-up, and tests call it hundreds
of times): `loadgen.python_helper`.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from loadgen.python_helper import PythonDied, PythonProcess, tail

__all__ = ["DaphneProcess", "ServerDidNotStart", "free_port", "free_ports", "user_code"]

BASE_DIR = Path(__file__).resolve().parent.parent


class ServerDidNotStart(Exception):
    """Daphne exited, or did not answer /healthz (or open its port) in time."""


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """`count` distinct ports free now. Held open together while chosen: two
    calls of `free_port` one after the other may each get the port the first
    just closed, and a server's HTTP and gRPC ports once came out the same."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in socks]


class DaphneProcess:
    """Start with `start()` (or as a context manager); `stop()` sends SIGTERM."""

    def __init__(
        self,
        *,
        extra_env: dict[str, str] | None = None,
        grpc: bool = True,
        log_path: Path | None = None,
        application: str = "config.asgi:application",
    ) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="qi-daphne-"))
        self.port, self.grpc_port = free_ports(2) if grpc else (free_port(), 0)
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.ws_url = f"ws://127.0.0.1:{self.port}"
        self.log_path = log_path or self.tmp / "daphne.log"
        self.application = application  # what Daphne serves, as `module:attribute`
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": f"sqlite:///{self.tmp / 'db.sqlite3'}",
            "VAR_DIR": str(self.tmp / "var"),
            "GRPC_PORT": str(self.grpc_port),
            "CONFIG_RECONCILE_SECONDS": "0.5",
            "SHUTDOWN_DRAIN_TIMEOUT": "2",
            "PYTHONUNBUFFERED": "1",
            **(extra_env or {}),
        }
        self.env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        self.proc: subprocess.Popen[bytes] | None = None
        self._shared_tokens: dict[str, str] = {}
        self._python: PythonProcess | None = None
        self._python_lock = threading.Lock()
        self._migrated = False

    def manage(self, *args: str, stdin: str | None = None) -> str:
        """Run `manage.py ARGS` against this server's database; its stdout."""
        result = subprocess.run(
            [sys.executable, str(BASE_DIR / "manage.py"), *args],
            env=self.env,
            cwd=BASE_DIR,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if result.returncode:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{result.stderr}")
        return result.stdout

    def run_python(self, code: str) -> str:
        """Run Python with Django set up on this server's database; what it prints.

        As `manage.py shell -c CODE` does (a fresh namespace, autocommit,
        connections closed after), but in one process kept for this server
        and started at the first call with `env` as it is then (and again
        if `env` has changed since). Raises RuntimeError with the traceback
        if the code raises or that process dies.
        """
        with self._python_lock:
            python = self._python
            if python is None or python.env != self.env or not python.alive():
                self._stop_python()
                python = self._python = PythonProcess(dict(self.env), self.tmp / "python.log")
            try:
                return python.run(code)
            except PythonDied as exc:
                self._stop_python()
                raise RuntimeError(f"run_python's process failed:\n{exc}") from None

    def _stop_python(self) -> None:
        """Stop `run_python`'s process, if any (the lock held)."""
        if self._python is not None:
            self._python.stop()
            self._python = None

    def issue_token(self, role: str, name: str | None = None) -> str:
        """A token of `role` named `name` (else `test-ROLE`, as `issue_tokens` names it)."""
        return self._issue([(role, name or f"test-{role}")])[0]

    def issue_tokens(self, *roles: str) -> list[str]:
        """A token of each role, named as `issue_token` names them, in one call."""
        return self._issue([(role, f"test-{role}") for role in roles])

    def _issue(self, tokens: list[tuple[str, str]]) -> list[str]:
        """Plaintexts of new tokens (role, name), as the `issue_token` command prints them."""
        code = "from api.store.services import api_token_issue\n" + "".join(
            f"print(api_token_issue(name={name!r}, role={role!r})[1])\n" for role, name in tokens
        )
        plaintexts = self.run_python(code).split()
        assert len(plaintexts) == len(tokens), plaintexts
        return plaintexts

    def shared_token(self, role: str) -> str:
        """One token of `role` for this server, issued at the first ask."""
        if role not in self._shared_tokens:
            self._shared_tokens[role] = self.issue_token(role, f"shared-{role}")
        return self._shared_tokens[role]

    def create_user(self, username: str, password: str, group: str = "viewer") -> None:
        self.run_python(user_code(username, password, group))

    def start(self, timeout: float = 60.0, *, healthz: bool = True) -> DaphneProcess:
        """Start Daphne and wait until it answers `/healthz`.

        `healthz=False` waits only until its HTTP port takes a connection, and
        sends no request at all: for a test whose own requests must be the
        server's first, or that shows the process serves gRPC without any.
        """
        (self.tmp / "var").mkdir(exist_ok=True)
        self._migrate()
        log = open(self.log_path, "ab")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "config.serve",  # Daphne's command line, honouring EVENT_LOOP
                "-b",
                "127.0.0.1",
                "-p",
                str(self.port),
                self.application,
            ],
            env=self.env,
            cwd=BASE_DIR,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        self._wait_ready(timeout, healthz)
        return self

    def _migrate(self) -> None:
        """Bring the database to this code's migrations, once per instance.

        A fresh SQLite database of our own is a copy of one migrated once
        per process (`_migrated_sqlite`): migrating takes seconds, a copy
        milliseconds, and a test suite starts many servers. A database the
        caller chose (`DATABASE_URL` in `extra_env`), or one that exists
        already, is migrated as it is. A restart (`stop()` then `start()`)
        finds it migrated by the first start: the code has not changed
        since, so it skips a `manage.py migrate` of a few seconds.
        """
        if self._migrated:
            return
        self._migrated = True
        target = self.tmp / "db.sqlite3"
        if self.env["DATABASE_URL"] != f"sqlite:///{target}" or target.exists():
            self.manage("migrate", "--noinput", "-v0")
            return
        # The backup API copies a consistent database, journal or not.
        source = contextlib.closing(sqlite3.connect(_migrated_sqlite(self.env)))
        with source as template, contextlib.closing(sqlite3.connect(target)) as copy:
            template.backup(copy)

    def _wait_ready(self, timeout: float, healthz: bool = True) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise ServerDidNotStart(f"daphne exited:\n{self.log()}")
            with contextlib.suppress(OSError):
                if healthz:
                    urllib.request.urlopen(f"{self.base_url}/healthz", timeout=1).read()
                else:
                    # A connection alone: Daphne makes no ASGI scope for it.
                    socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            time.sleep(0.1 if healthz else 0.02)
        self.stop()
        waited = f"{self.base_url}/healthz" if healthz else f"port {self.port}"
        raise ServerDidNotStart(f"no answer on {waited}:\n{self.log()}")

    def log(self) -> str:
        return tail(self.log_path)

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM (graceful drain), then SIGKILL if it lingers; the exit code.

        `run_python`'s process stops too (a later call starts another).
        """
        with self._python_lock:
            self._stop_python()
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.terminate()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(5)

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> DaphneProcess:
        # A start that fails leaves no process or temporary folder behind:
        # __exit__ does not run for a failed __enter__.
        try:
            return self.start()
        except BaseException:
            self.cleanup()
            raise

    def __exit__(self, *exc: Any) -> None:
        self.cleanup()


def user_code(username: str, password: str, group: str = "viewer") -> str:
    """Python (for `run_python`) creating a user in a group: one start-up with other code."""
    return (
        "from django.contrib.auth.models import Group, User\n"
        f"u = User.objects.create_user({username!r}, password={password!r})\n"
        f"u.groups.add(Group.objects.get(name={group!r}))\n"
    )


_template: Path | None = None


def _migrated_sqlite(env: dict[str, str]) -> Path:
    """A SQLite database migrated to this code, made once per process (removed at exit)."""
    global _template
    if _template is None:
        folder = Path(tempfile.mkdtemp(prefix="qi-migrated-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        path = folder / "db.sqlite3"
        subprocess.run(
            [sys.executable, str(BASE_DIR / "manage.py"), "migrate", "--noinput", "-v0"],
            env={**env, "DATABASE_URL": f"sqlite:///{path}", "VAR_DIR": str(folder)},
            cwd=BASE_DIR,
            check=True,
            capture_output=True,
            timeout=120,
        )
        _template = path
    return _template
