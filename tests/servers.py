"""Throwaway PostgreSQL and Redis servers for one test session (a pytest plugin).

The PostgreSQL tests (tests/api/test_postgres.py) and the scale-out tests
(tests/service/replica_pair.py) find their servers through TEST_DATABASE_URL
and TEST_REDIS_URL. A variable already set names a server of one's own: it is
used and nothing is started for it. Otherwise this plugin starts the server
from the Debian package's binaries (`redis-server`; `initdb` and `postgres`
from the newest /usr/lib/postgresql/<version>/bin; `make test` installs them
through scripts/test-deps.sh) on a free loopback port in a temporary
directory, and stops it and removes the directory when the session ends,
whether the tests passed, failed or were interrupted.

A server is started only when a collected test module needs it, that is, when
its source names the server's variable or tests/service/replica_pair.py (see
NEEDED_BY). A test that needs a server that could not be started fails at
setup, saying why.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

__all__ = [
    "NEEDED_BY",
    "ServerError",
    "pytest_collection_finish",
    "pytest_configure",
    "pytest_report_collectionfinish",
    "pytest_runtest_setup",
    "pytest_unconfigure",
]

DATABASE, REDIS = "TEST_DATABASE_URL", "TEST_REDIS_URL"
# Text in a test module's source that shows it needs the server.
NEEDED_BY = {
    DATABASE: ("TEST_DATABASE_URL", "replica_pair"),
    REDIS: ("TEST_REDIS_URL", "replica_pair"),
}
URLS = {
    # A superuser on a server of its own: the tests create and drop databases.
    DATABASE: "postgres://qi@127.0.0.1:{port}/qi",
    REDIS: "redis://127.0.0.1:{port}/0",
}
READY_TIMEOUT = 30.0
STOP_TIMEOUT = 20.0


class ServerError(Exception):
    """A throwaway server could not be started; the message says why."""


@dataclass
class _Running:
    """One server process, the signal that stops it cleanly, and its directory."""

    description: str
    process: subprocess.Popen[bytes]
    stop_signal: signal.Signals
    directory: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(self.stop_signal)
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


@dataclass
class _State:
    planned: dict[str, int] = field(default_factory=dict)  # variable -> reserved port
    running: list[_Running] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)  # variable -> why it did not start
    needs: dict[Path, set[str]] = field(default_factory=dict)  # test file -> variables

    def needs_of(self, path: Path) -> set[str]:
        if path not in self.needs:
            try:
                source = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                source = ""
            self.needs[path] = {
                variable
                for variable, markers in NEEDED_BY.items()
                if any(marker in source for marker in markers)
            }
        return self.needs[path]


_STATE = pytest.StashKey[_State]()


def pytest_configure(config: pytest.Config) -> None:
    # An xdist worker inherits the controller's variables (and servers).
    if hasattr(config, "workerinput"):
        return
    state = _State()
    config.stash[_STATE] = state
    # The variables are set now, before collection, because test modules read
    # them at import; the servers start once collection shows they are needed.
    for variable, url in URLS.items():
        if not os.environ.get(variable):
            state.planned[variable] = _free_port()
            os.environ[variable] = url.format(port=state.planned[variable])
    # xdist's controller collects nothing, so it cannot tell what is needed.
    if state.planned and config.getoption("dist", "no") != "no":
        _start(state, set(state.planned))


@pytest.hookimpl(tryfirst=True)  # before the terminal reporter prints our report
def pytest_collection_finish(session: pytest.Session) -> None:
    state = session.config.stash.get(_STATE, None)
    if state is None or not state.planned or state.running or state.errors:
        return
    needed: set[str] = set()
    if not session.config.option.collectonly:
        for item in session.items:
            needed |= state.needs_of(item.path)
    for variable in state.planned.keys() - needed:
        # Nothing selected needs it: a variable naming no server would only mislead.
        del os.environ[variable]
    _start(state, needed & state.planned.keys())


def pytest_report_collectionfinish(config: pytest.Config) -> list[str]:
    state = config.stash.get(_STATE, None)
    if state is None:
        return []
    lines = [f"test servers: {running.description}" for running in state.running]
    lines += [f"test servers: {why}" for why in state.errors.values()]
    return lines


def pytest_runtest_setup(item: pytest.Item) -> None:
    state = item.config.stash.get(_STATE, None)
    if state is None or not state.errors:
        return
    for variable in sorted(state.needs_of(item.path) & state.errors.keys()):
        pytest.fail(state.errors[variable], pytrace=False)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None:
        return
    while state.running:
        state.running.pop().stop()
    for variable in state.planned:
        os.environ.pop(variable, None)


def _start(state: _State, variables: Iterable[str]) -> None:
    starters: dict[str, Callable[[int], _Running]] = {
        DATABASE: _start_postgres,
        REDIS: _start_redis,
    }
    for variable in sorted(variables):
        try:
            state.running.append(starters[variable](state.planned[variable]))
        except ServerError as exc:
            state.errors[variable] = f"{exc} (or set {variable} to a server of your own)"
            del os.environ[variable]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _dying_with_parent(args: list[str], stop_signal: signal.Signals) -> list[str]:
    """`args`, run so that the server gets `stop_signal` if pytest itself is killed.

    util-linux's `setpriv --pdeathsig` sets it and execs the server (it
    survives the exec; subprocess switches user before). Not a preexec_fn:
    one makes subprocess fork() instead of vfork(), and a fork() while
    gRPC's threads run (in any test process that used a gRPC client) runs
    gRPC's fork handlers, which crashed the child before its exec with
    SIGABRT ("Epoll1Poller ... epoll_wait error: Bad file descriptor"): a
    Redis a test started died at birth in CI (see tests/processes.py).
    """
    setpriv = shutil.which("setpriv")
    if not sys.platform.startswith("linux") or setpriv is None:
        return args
    return [setpriv, f"--pdeathsig={stop_signal.name.removeprefix('SIG')}", *args]


def _as_user(user: str | None) -> dict[str, object]:
    if user is None:
        return {}
    return {"user": user, "group": pwd.getpwnam(user).pw_gid, "extra_groups": []}


def _launch(
    description: str,
    args: list[str],
    directory: Path,
    stop_signal: signal.Signals,
    ready: Callable[[], bool],
    user: str | None = None,
) -> _Running:
    """Starts a server whose output goes to directory/server.log and waits until
    `ready()`; on failure (or Ctrl-C meanwhile) stops it and removes `directory`."""
    log_path = directory / "server.log"
    with open(log_path, "wb") as log:
        # Its own process group: a Ctrl-C reaches pytest, which then stops the
        # server in order, instead of reaching the server mid-test.
        process = subprocess.Popen(
            _dying_with_parent(args, stop_signal),
            cwd=directory,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            process_group=0,
            **_as_user(user),
        )
    running = _Running(description, process, stop_signal, directory)
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while not ready():
            if process.poll() is not None or time.monotonic() > deadline:
                if process.poll() is None:
                    why = f"did not answer within {READY_TIMEOUT:.0f} s"
                else:
                    why = f"exited with status {process.returncode}"
                log_lines = log_path.read_text(errors="replace").strip().splitlines()
                raise ServerError(f"{Path(args[0]).name} {why}:\n" + "\n".join(log_lines[-15:]))
            time.sleep(0.05)
    except BaseException:
        running.stop()
        raise
    return running


def _start_redis(port: int) -> _Running:
    binary = shutil.which("redis-server")
    if binary is None:
        raise ServerError("Redis tests need redis-server (Debian's redis-server package)")
    directory = Path(tempfile.mkdtemp(prefix="qi-test-redis-"))
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory)]
    args += ["--save", "", "--appendonly", "no", "--daemonize", "no"]

    def ready() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    description = f"Redis on 127.0.0.1:{port} in {directory}"
    return _launch(description, args, directory, signal.SIGTERM, ready)


def _postgres_bin() -> Path:
    """The newest /usr/lib/postgresql/<version>/bin, else wherever initdb is on PATH."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: [int(part) for part in p.parts[-3].split(".") if part.isdigit()],
    )
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    if initdb is None:
        raise ServerError("PostgreSQL tests need initdb and postgres (Debian's postgresql package)")
    return Path(initdb).parent


def _postgres_user() -> str | None:
    """None, or the user to run PostgreSQL as: it refuses to run as root."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise ServerError(
            "PostgreSQL will not run as root and there is no postgres user "
            "(Debian's postgresql package creates it)"
        ) from None
    return "postgres"


def _start_postgres(port: int) -> _Running:
    import psycopg

    bindir, user = _postgres_bin(), _postgres_user()
    directory = Path(tempfile.mkdtemp(prefix="qi-test-postgres-"))
    # Its own socket directory: the packaged one may be missing or someone else's.
    sockets = directory / "socket"
    sockets.mkdir()
    if user is not None:
        for path in (directory, sockets):
            shutil.chown(path, user, pwd.getpwnam(user).pw_gid)
    data = directory / "data"
    initdb = subprocess.run(
        [str(bindir / "initdb"), "-D", str(data), "-U", "qi", "--auth=trust"]
        + ["--encoding=UTF8", "--locale=C", "--no-sync"],
        cwd=directory,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        **_as_user(user),
    )
    if initdb.returncode != 0:
        shutil.rmtree(directory, ignore_errors=True)
        raise ServerError(f"initdb failed:\n{initdb.stdout}{initdb.stderr}".strip())
    # Durability is worthless for a database thrown away at the end.
    args = [str(bindir / "postgres"), "-D", str(data), "-p", str(port), "-k", str(sockets)]
    args += ["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"]
    args += ["-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
    server_url = f"postgres://qi@127.0.0.1:{port}/postgres"

    def ready() -> bool:
        try:
            psycopg.connect(server_url, connect_timeout=1).close()
        except psycopg.OperationalError:
            return False
        return True

    description = f"PostgreSQL {bindir.parent.name} on 127.0.0.1:{port} in {directory}"
    # SIGINT is PostgreSQL's fast shutdown: it does not wait for clients to leave.
    running = _launch(description, args, directory, signal.SIGINT, ready, user)
    try:
        with psycopg.connect(server_url, autocommit=True) as admin:
            admin.execute("CREATE DATABASE qi")
    except BaseException as exc:
        running.stop()
        if isinstance(exc, psycopg.Error):
            raise ServerError(f"PostgreSQL started but CREATE DATABASE qi failed: {exc}") from exc
        raise
    return running
