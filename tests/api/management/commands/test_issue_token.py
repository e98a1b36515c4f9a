"""`issue_token` as an operator runs it: a name or expiry refused naming the argument and
what is wrong with it; stopped at any point, it leaves no live token it has not shown."""

from __future__ import annotations

import contextlib
import hashlib
import signal
import sqlite3
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from api.store.models import ApiToken
from tests.api.management.commands.locked_database import (
    interrupted_while_writing,
    migrated_database,
)

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("name", "found"),
    [
        ("fe\u2028forged line", "U+2028 at character 3"),
        ("fe\x1b[31m", "U+001B at character 3"),
        ("\u202e1-dnetnorf", "U+202E at character 1"),
    ],
)
def test_issue_token_refuses_a_name_that_would_garble_its_listing_and_issues_nothing(
    name: str, found: str
) -> None:
    with pytest.raises(CommandError) as raised:
        call_command(
            "issue_token", name, "--role", "frontend", stdout=StringIO(), stderr=StringIO()
        )
    assert str(raised.value) == (
        "name: a token name may hold no control characters, line or paragraph separators "
        f"or bidi controls ({found})"
    )
    assert not ApiToken.objects.exists()


def test_issue_token_refuses_a_name_that_is_not_utf_8_naming_the_argument() -> None:
    # Bytes in another encoding reach argv as surrogate escapes ($'\xff').
    with pytest.raises(CommandError) as raised:
        call_command(
            "issue_token", "fe\udcff", "--role", "frontend", stdout=StringIO(), stderr=StringIO()
        )
    assert str(raised.value) == "name: not valid UTF-8"
    assert not ApiToken.objects.exists()


def test_issue_token_says_which_expiry_is_out_of_range() -> None:
    with pytest.raises(CommandError) as raised:
        call_command(
            "issue_token", "q", "--role", "querier", "--expires-at", "9999-12-31T23:59:59-05:00",
            stdout=StringIO(), stderr=StringIO(),
        )  # fmt: skip
    assert str(raised.value) == (
        "--expires-at: 9999-12-31T23:59:59-05:00 is out of range (years 1 to 9999, in UTC)"
    )
    assert not ApiToken.objects.exists()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_issue_token_stopped_while_its_insert_waits_on_a_lock_still_shows_the_token(
    tmp_path: Path, signum: int
) -> None:
    env, path = migrated_database(tmp_path)
    done = interrupted_while_writing(["issue_token", "ci-1", "--role", "viewer"], env, path, signum)
    # The stop is taken once the token is shown: not a live token no one has.
    assert done.returncode == 130, done.stderr
    plaintext = done.stdout.strip()
    assert plaintext.startswith("qi_")
    assert "Issued viewer token #1 'ci-1'; it is shown once:" in done.stderr
    assert "Traceback" not in done.stderr
    with contextlib.closing(sqlite3.connect(path)) as db:
        rows = db.execute(f"SELECT name, token_hash FROM {ApiToken._meta.db_table}").fetchall()
    assert rows == [("ci-1", hashlib.sha256(plaintext.encode()).hexdigest())]
