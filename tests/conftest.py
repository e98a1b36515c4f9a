"""Fixtures shared by every test directory.

`daphne_server` is a real Daphne process (free loopback port, its own
migrated SQLite database, a free gRPC port, config reconcile every 0.5s) for
service, e2e and gRPC tests; see `loadgen.daphne_process.DaphneProcess` for its
helpers: `base_url`, `ws_url`, `port`, `grpc_port`, `env`, `manage(...)`,
`run_python(code)`, `issue_token(role)`, `create_user(name, password, group)`.
`run_python` (and the token and user helpers built on it) runs in one
long-lived Django process per server (`loadgen.python_helper`), started at
the first call and stopped with the server; `manage()` still runs a real
`manage.py` process each time.
It is started once per test session and stopped with SIGTERM at the end.
`host` is this process's runtime host, started for one test (no gRPC port).
"""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import pytest
from django.apps import apps as django_apps
from django.contrib.auth.models import Group, User
from django.test import override_settings

from api.wire import runtime_host
from loadgen.daphne_process import DaphneProcess

# Throwaway PostgreSQL and Redis for the tests that need them.
pytest_plugins = ["tests.servers"]


@pytest.fixture(scope="session", autouse=True)
def _quick_password_hashes() -> Iterator[None]:
    """In this process only, passwords hash with MD5, as Django's testing advice has it.

    The production hasher (PBKDF2, a million rounds) takes about 0.4 s a
    hash, and the `editor`/`viewer` fixtures hash once per test: hundreds
    of tests, minutes of the suite. Servers the tests start (DaphneProcess)
    keep the real hasher, so the service tests' logins still run it; the
    browser tests' servers use MD5 too (tests/e2e/quick_hash_settings.py).
    """
    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


# The fixtures that give a test the database (pytest-django's, and its marker).
_DATABASE_FIXTURES = {"db", "transactional_db", "django_db_reset_sequences", "live_server"}
# The data migration's own function, so the rows are made as a migrate makes them.
_MIGRATION_ROWS = importlib.import_module("api.migrations.0002_roles_and_settings_row")


@pytest.fixture(autouse=True)
def _migrated_rows(request: pytest.FixtureRequest) -> None:
    """A test given the database starts from what the migrations leave in it:
    the role groups and the settings row.

    A transactional test flushes every table when it ends, those rows too.
    Run in one process, pytest-django puts transactional tests last; parallel
    workers (pytest-xdist) run whole files in turn, so a test could start on a
    flushed database and find no settings row.
    """
    wanted = request.node.get_closest_marker("django_db") is not None
    if not wanted and _DATABASE_FIXTURES.isdisjoint(request.fixturenames):
        return
    request.getfixturevalue("db")  # or the transactional one the test asked for
    _MIGRATION_ROWS.create_roles_and_settings(django_apps, None)


@pytest.fixture(scope="session")
def daphne_server() -> Iterator[DaphneProcess]:
    with DaphneProcess() as server:
        yield server


@pytest.fixture
async def host(settings: Any, transactional_db: None) -> AsyncIterator[runtime_host.RuntimeHost]:
    """The process's runtime host, started for one test and shut down after it."""
    settings.GRPC_PORT = 0
    started = await runtime_host.ensure_started()
    yield started
    await runtime_host.shutdown(drain_timeout=0)


@pytest.fixture
def editor(db: None) -> User:
    """A person in the editor group (the migration's, made again by `_migrated_rows`
    after a transactional test's flush)."""
    user = User.objects.create_user("erin", password="pw-erin-123")
    user.groups.add(Group.objects.get(name="editor"))
    return user


@pytest.fixture
def viewer(db: None) -> User:
    """A person in the viewer group."""
    user = User.objects.create_user("victor", password="pw-victor-123")
    user.groups.add(Group.objects.get(name="viewer"))
    return user


_EXIT_STATUS: list[int] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _EXIT_STATUS.append(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Leave without interpreter finalisation once everything has been reported.

    After the summary and after tests.servers has stopped its servers, the
    process has nothing left to do; twice (out of several runs) a full run
    then crashed in finalisation (a segfault after "N passed", most likely a
    native extension's thread outliving the interpreter's teardown), turning
    a green run red. Not yet tracked down: see the closing note.
    """
    if _EXIT_STATUS:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_EXIT_STATUS[-1])


@pytest.fixture
def busy_grpc() -> Iterator[None]:
    """A gRPC server and a client calling it flat out on a thread of this process."""
    stop = threading.Event()
    started = threading.Event()

    async def echo_until_stopped() -> None:
        server = grpc.aio.server()
        echo = grpc.unary_unary_rpc_method_handler(lambda request, _context: request)
        server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("t", {"E": echo})])
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = channel.unary_unary("/t/E")
            await call(b"ping")
            started.set()
            while not stop.is_set():
                await call(b"ping")
        await server.stop(None)

    caller = threading.Thread(target=asyncio.run, args=(echo_until_stopped(),))
    caller.start()
    try:
        assert started.wait(30), "the gRPC calls did not start"
        yield
    finally:
        stop.set()
        caller.join(30)
