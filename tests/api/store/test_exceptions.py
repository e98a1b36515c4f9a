"""Which database errors are worth a retry: SQLite's statement faults are not."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from django.db import DatabaseError, OperationalError, ProgrammingError, connection
from django.db.utils import DatabaseErrorWrapper
from rest_framework.test import APIClient

from api.store.exceptions import (
    DATABASE_UNREACHABLE,
    sqlite_statement_faults_are_programming_errors,
)
from api.store.models import Tenant
from api.store.services import api_token_issue


def _run_through_the_wrapper(raw: sqlite3.Connection, sql: str) -> Any:
    """Run `sql` on a real SQLite connection, its errors mapped as Django maps them."""
    errors = DatabaseErrorWrapper(SimpleNamespace(Database=sqlite3, errors_occurred=False))

    def execute(sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        with errors:
            return raw.execute(sql)

    return sqlite_statement_faults_are_programming_errors(execute, sql, None, False, {})


def test_a_missing_table_on_sqlite_is_a_programming_error_not_a_try_again(tmp_path: Path):
    raw = sqlite3.connect(tmp_path / "db.sqlite3")
    with pytest.raises(ProgrammingError, match="no such table: api_tenant") as raised:
        _run_through_the_wrapper(raw, "SELECT * FROM api_tenant")
    assert not isinstance(raised.value, DATABASE_UNREACHABLE)


def test_a_locked_sqlite_database_stays_a_try_again_error(tmp_path: Path):
    holder = sqlite3.connect(tmp_path / "db.sqlite3", isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    waiter = sqlite3.connect(tmp_path / "db.sqlite3", timeout=0)
    with pytest.raises(OperationalError, match="database is locked") as raised:
        _run_through_the_wrapper(waiter, "SELECT * FROM t")
    assert isinstance(raised.value, DATABASE_UNREACHABLE)
    holder.execute("ROLLBACK")


def test_a_table_gone_under_a_running_server_is_a_500_at_rest_not_a_503(db: None):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's own error classes are under test")
    _, plaintext = api_token_issue(name="viewer-bot", role="viewer")
    viewer_api = APIClient()
    viewer_api.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    # Undone with the test's transaction: SQLite's DDL is transactional.
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {Tenant._meta.db_table} RENAME TO gone")
    with pytest.raises(ProgrammingError, match="no such table"):
        viewer_api.get("/api/v1/tenants/")
    viewer_api.raise_request_exception = False
    response = viewer_api.get("/api/v1/tenants/")
    assert response.status_code == 500
    assert "Retry-After" not in response


def test_a_write_to_a_read_only_sqlite_database_is_no_try_again_error(tmp_path: Path):
    path = tmp_path / "db.sqlite3"
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.commit()
    reader = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    with pytest.raises(DatabaseError, match="readonly database") as raised:
        _run_through_the_wrapper(reader, "INSERT INTO t VALUES (1)")
    assert not isinstance(raised.value, DATABASE_UNREACHABLE)
