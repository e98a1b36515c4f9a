"""The config store on PostgreSQL (the scale-out database), in a fresh database.

Runs `manage.py` in subprocesses pointed at a throw-away database on the
server named by TEST_DATABASE_URL (tests/servers.py starts a throwaway server and
sets it, unless it is set already). Without it the tests fail, saying so, as the
scale-out tests do: a skipped database test would pass CI without ever running.
"""

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

ROOT = Path(__file__).resolve().parents[3]
SERVER_URL = os.environ.get("TEST_DATABASE_URL", "")

RACE = """
import threading
from api.store import services
from api.store.exceptions import VersionConflict
v = services.tenant_put(
    tenant_id="race", config={}, expected_version=None, author=None, source="cli"
).version
barrier, outcomes = threading.Barrier(2), []
def edit(n):
    from django.db import connection
    barrier.wait()
    try:
        services.tenant_patch(tenant_id="race", changes={"max_queriers_per_tenant": n},
                              expected_version=v, author=None, source="cli")
        outcomes.append("saved")
    except VersionConflict as exc:
        outcomes.append("conflict with the winner" if exc.current_version == v + 1 else "?")
    finally:
        connection.close()
threads = [threading.Thread(target=edit, args=(n,)) for n in (1, 2)]
[t.start() for t in threads]
[t.join() for t in threads]
print(sorted(outcomes))
"""


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


@pytest.fixture(scope="module")
def database_url() -> Iterator[str]:
    import psycopg

    if not SERVER_URL:
        pytest.fail(
            "PostgreSQL tests need TEST_DATABASE_URL (tests/servers.py sets it when it "
            "starts a throwaway PostgreSQL; set it to use a server of your own)"
        )
    name = f"qi_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(SERVER_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield with_database(SERVER_URL, name)
    finally:
        with psycopg.connect(SERVER_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def manage(database_url: str, *args: str) -> str:
    env = {**os.environ, "DATABASE_URL": database_url, "SECRET_KEY": "test"}
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_migrations_and_the_demo_setup_work_on_postgresql(database_url: str) -> None:
    manage(database_url, "migrate", "--noinput", "-v0")
    assert "Seeded demo tenant team-a" in manage(database_url, "seed_demo_config")
    assert "user: demo" in manage(database_url, "create_demo_user")


def test_two_editors_racing_on_one_version_on_postgresql_save_exactly_once(
    database_url: str,
) -> None:
    manage(database_url, "migrate", "--noinput", "-v0")
    last_line = manage(database_url, "shell", "-c", RACE).strip().splitlines()[-1]
    assert last_line == "['conflict with the winner', 'saved']"
