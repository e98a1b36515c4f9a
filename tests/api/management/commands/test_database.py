"""A command whose database cannot do its part says so in one line, not a traceback.

Run as an operator types them (subprocesses of manage.py): against a
database that was never migrated, and one that does not answer. The
decorator's line for an error mid-command is checked in-process.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import OperationalError

from loadgen.daphne_process import BASE_DIR

COMMANDS = [
    ["issue_token", "frontend-1", "--role", "frontend"],
    ["revoke_token", "1"],
    ["create_demo_user"],
    ["seed_demo_config"],
    ["loadgen", "--url", "http://127.0.0.1:9"],
]


def manage(args: list[str], tmp_path: Path, database_url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BASE_DIR / "manage.py"), *args],
        env={
            "PATH": "/usr/bin:/bin",
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "VAR_DIR": str(tmp_path),
            "DATABASE_URL": database_url,
        },
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("args", COMMANDS, ids=lambda args: args[0])
def test_a_command_against_an_unmigrated_database_names_the_migrations_to_run(
    args: list[str], tmp_path: Path
) -> None:
    database = tmp_path / "db.sqlite3"
    result = manage(args, tmp_path, f"sqlite:///{database}")
    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("CommandError: the database is behind this code: ")
    assert "migration(s) not applied (contenttypes.0001_initial, " in line
    assert line.endswith("run `python manage.py migrate` against it, then try again")


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port bound but not listening: every connection to it is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def test_a_command_against_a_database_that_does_not_answer_says_so_in_one_line(
    tmp_path: Path, closed_port: int
) -> None:
    url = f"postgres://qi:qi@127.0.0.1:{closed_port}/qi"
    result = manage(["issue_token", "frontend-1", "--role", "frontend"], tmp_path, url)
    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("CommandError: the database failed: connection failed: ")
    assert "Connection refused" in line
    assert result.stdout == ""  # no token printed that was never stored


@pytest.mark.django_db
def test_a_database_error_mid_command_is_one_line_saying_what_the_database_said(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def locked(**_: object) -> None:
        raise OperationalError("database is locked")

    monkeypatch.setattr("api.management.commands.issue_token.api_token_issue", locked)
    with pytest.raises(CommandError, match="^the database failed: database is locked$"):
        call_command("issue_token", "q", "--role", "querier", stdout=StringIO(), stderr=StringIO())
