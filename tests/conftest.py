"""Fixtures shared by every test directory.

`daphne_server` is a real Daphne process (free loopback port, its own
migrated SQLite database, a free gRPC port, config reconcile every 0.5s) for
service, e2e and gRPC tests; see `loadgen.daphne_process.DaphneProcess` for its
helpers: `base_url`, `ws_url`, `port`, `grpc_port`, `env`, `manage(...)`,
`run_python(code)`, `issue_token(role)`, `create_user(name, password, group)`.
It is started once per test session and stopped with SIGTERM at the end.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import Group, User

from loadgen.daphne_process import DaphneProcess

# Throwaway PostgreSQL and Redis for the tests that need them.
pytest_plugins = ["tests.servers"]


@pytest.fixture(scope="session")
def daphne_server() -> Iterator[DaphneProcess]:
    server = DaphneProcess()
    try:
        server.start()
        yield server
    finally:
        server.cleanup()


@pytest.fixture
def editor(db: None) -> User:
    """A person in the editor group (created here too: transactional tests flush the
    groups the migrations made)."""
    user = User.objects.create_user("erin", password="pw-erin-123")
    user.groups.add(Group.objects.get_or_create(name="editor")[0])
    return user


@pytest.fixture
def viewer(db: None) -> User:
    """A person in the viewer group."""
    user = User.objects.create_user("victor", password="pw-victor-123")
    user.groups.add(Group.objects.get_or_create(name="viewer")[0])
    return user
