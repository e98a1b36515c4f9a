"""A NUL in a URL against a real Daphne on PostgreSQL: 400, never a 500.

PostgreSQL cannot hold a NUL character, and psycopg refuses to send one, so
these requests answered 500 there (tests/api/test_middleware.py has the
list). The server runs on a fresh database on the server named by
TEST_DATABASE_URL (tests/servers.py starts a throwaway one when unset).
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator

import pytest

from loadgen.daphne_process import DaphneProcess
from tests.api.store.test_postgres import with_database
from tests.api.test_middleware import NUL_REQUESTS
from tests.service.test_faults import session_cookie

SERVER_URL = os.environ.get("TEST_DATABASE_URL", "")


@pytest.fixture(scope="module")
def postgres_server() -> Iterator[DaphneProcess]:
    import psycopg

    if not SERVER_URL:
        pytest.fail("this test needs TEST_DATABASE_URL (tests/servers.py sets it)")
    name = f"qi_nul_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(SERVER_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    server = DaphneProcess(grpc=False, extra_env={"DATABASE_URL": with_database(SERVER_URL, name)})
    try:
        server.start()
        yield server
    finally:
        server.cleanup()
        with psycopg.connect(SERVER_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def status_of(server: DaphneProcess, method: str, path: str, headers: dict[str, str]) -> int:
    request = urllib.request.Request(
        f"{server.base_url}{path}",
        method=method.upper(),
        data=b"{}" if method in ("put", "patch", "post") else None,
        headers={"Content-Type": "application/json", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_a_nul_in_a_url_is_refused_on_postgresql_on_the_api_and_the_pages(
    postgres_server: DaphneProcess,
) -> None:
    token = postgres_server.issue_token("editor")
    postgres_server.create_user("nul-editor", "pw-nul-123", "editor")
    cookie = session_cookie(postgres_server, "nul-editor", "pw-nul-123")
    outcomes = {
        (method, path): status_of(
            postgres_server,
            method,
            path,
            {"Authorization": f"Bearer {token}"} if api else {"Cookie": cookie},
        )
        for method, path, api in NUL_REQUESTS
    }
    assert outcomes == {key: 400 for key in outcomes}
    # The same server answers the same requests without the NUL as usual.
    assert (
        status_of(
            postgres_server, "get", "/api/v1/tenants/ab/", {"Authorization": f"Bearer {token}"}
        )
        == 404
    )
