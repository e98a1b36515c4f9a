"""The config store on PostgreSQL (the scale-out database), in a fresh database.

Runs `manage.py` in subprocesses pointed at a throw-away database on the
server named by TEST_DATABASE_URL (tests/servers.py starts a throwaway server and
sets it, unless it is set already). Without it the tests fail, saying so, as the
scale-out tests do: a skipped database test would pass CI without ever running.
"""

import json
import os
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.api.store.history_race import manage, mixed_writers_outcome

SERVER_URL = os.environ.get("TEST_DATABASE_URL", "")

# A block written in Cortex's order; jsonb keeps keys by length instead.
FIELD_ORDER = """
import json
from api.store import selectors, services
from api.store.config_yaml import tenant_block_yaml
from api.store.models import Tenant
block = {"max_queriers_per_tenant": 3, "query_priority": {"enabled": True,
         "default_priority": 0, "priorities": [{"priority": 2, "reserved_queriers": 1,
         "query_attributes": [{"regex": "x", "time_window": {"start": "2h", "end": "0s"}}]}]}}
services.tenant_put(tenant_id="t", config=block, expected_version=None, author=None, source="cli")
stored = Tenant.objects.get(tenant_id="t").config
print(json.dumps({"yaml": tenant_block_yaml("t", stored),
                  "export": json.dumps(selectors.runtime_config_export()["t"])}))
"""

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


def test_a_stored_block_reads_in_field_order_on_postgresql(database_url: str) -> None:
    """jsonb reorders keys: the YAML view, diffs and export put them back in field order."""
    manage(database_url, "migrate", "--noinput", "-v0")
    read = json.loads(manage(database_url, "shell", "-c", FIELD_ORDER).strip().splitlines()[-1])
    assert read["yaml"].splitlines() == [
        "t:",
        "  max_queriers_per_tenant: 3",
        "  query_priority:",
        "    enabled: true",
        "    default_priority: 0",
        "    priorities:",
        "    - priority: 2",
        "      reserved_queriers: 1",
        "      query_attributes:",
        "      - regex: x",
        "        time_window:",
        "          start: 2h",
        "          end: 0s",
    ]
    assert read["export"].startswith('{"max_queriers_per_tenant": 3, "query_priority"')


def test_many_writers_on_postgresql_leave_a_gap_free_history_the_store_matches(
    database_url: str,
) -> None:
    outcome = mixed_writers_outcome(database_url)
    assert outcome["writes"] > 0 and outcome["refused"] > 0, outcome
    assert outcome == {**outcome, "gap_free": True, "config_version_is_the_last": True}
    assert outcome["broken_links"] == []
    assert outcome["replayed_is_stored"] and outcome["versions_are_last_changes"]
