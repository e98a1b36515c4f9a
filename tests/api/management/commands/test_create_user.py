"""`create_user`: a viewer or editor login from the command line, its password never on it.

Each refusal names the option at fault and leaves the users as they were;
a login it makes signs in through the real login form with the role asked for.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from api.management.commands.create_user import PASSWORD_ENV
from api.store.roles import role_of

pytestmark = pytest.mark.django_db

PASSWORD = "viewer-pass-123"


@pytest.fixture(autouse=True)
def _no_password_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PASSWORD_ENV, raising=False)


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("create_user", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def password_file(tmp_path: Path, text: str = PASSWORD + "\n") -> str:
    path = tmp_path / "password"
    path.write_text(text, encoding="utf-8")
    return str(path)


def signs_in(name: str, password: str) -> bool:
    response = Client().post("/login/", {"username": name, "password": password})
    return response.status_code == 302


def users() -> list[tuple[str, bool, list[str]]]:
    """Every user with what a refusal must leave alone: active, groups (and below, password)."""
    return [
        (user.username, user.is_active, sorted(user.groups.values_list("name", flat=True)))
        for user in get_user_model().objects.order_by("username")
    ]


def test_a_viewer_login_made_from_a_password_file_signs_in_as_a_viewer(tmp_path: Path) -> None:
    out = run("vera", "--role", "viewer", "--password-file", password_file(tmp_path))
    assert out == "Created viewer login 'vera'; sign in at /login/.\n"
    assert PASSWORD not in out
    assert signs_in("vera", PASSWORD)
    assert role_of(get_user_model().objects.get(username="vera")) == "viewer"


def test_the_password_may_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    run("eddie", "--role", "editor")
    assert signs_in("eddie", PASSWORD)
    assert role_of(get_user_model().objects.get(username="eddie")) == "editor"


def test_the_password_may_come_from_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORD + "\n"))
    run("vera", "--role", "viewer", "--password-file", "-")
    assert signs_in("vera", PASSWORD)


def test_at_a_terminal_the_password_is_asked_for_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = iter([PASSWORD, PASSWORD])
    monkeypatch.setattr("sys.stdin.isatty", lambda: True, raising=False)
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(answers))
    run("vera", "--role", "viewer")
    assert signs_in("vera", PASSWORD)


def test_two_different_answers_at_the_terminal_create_no_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers = iter([PASSWORD, PASSWORD + "x"])
    monkeypatch.setattr("sys.stdin.isatty", lambda: True, raising=False)
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(answers))
    with pytest.raises(CommandError, match="^password: the two entries differ$"):
        run("vera", "--role", "viewer")
    assert users() == []


def test_with_no_password_source_and_no_terminal_it_says_where_a_password_may_come_from(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    with pytest.raises(CommandError, match=f"^no password: give --password-file .*{PASSWORD_ENV}"):
        run("vera", "--role", "viewer")
    assert users() == []


def test_a_password_on_the_command_line_is_refused_without_echoing_it() -> None:
    # `ps` shows every process's arguments to every user of the machine.
    with pytest.raises(CommandError, match=r"^--password: a password on the command line") as err:
        run("vera", "--role", "viewer", "--password", PASSWORD)
    assert PASSWORD not in str(err.value)
    assert users() == []


@pytest.mark.parametrize("role", ["admin", "Viewer", ""])
def test_a_role_that_is_not_viewer_or_editor_is_refused_by_name(tmp_path: Path, role: str) -> None:
    with pytest.raises(CommandError, match=r"argument --role: invalid choice"):
        run("vera", "--role", role, "--password-file", password_file(tmp_path))
    assert users() == []


@pytest.mark.parametrize(
    ("args", "text", "error"),
    [
        (("a b",), PASSWORD, r"^name: 'a b': Enter a valid username"),
        (("",), PASSWORD, r"^name: '': This field cannot be blank"),
        (("vera",), "\n", r"^--password-file: must not be empty$"),
        (("vera",), "short\n", r"^--password-file: This password is too short"),
        (("vera",), "two-line-pass\nword\n", r"^--password-file: must not contain control"),
    ],
)
def test_a_bad_name_or_password_is_refused_by_name_and_creates_no_one(
    tmp_path: Path, args: tuple[str, ...], text: str, error: str
) -> None:
    with pytest.raises(CommandError, match=error):
        run(*args, "--role", "viewer", "--password-file", password_file(tmp_path, text))
    assert users() == []


@pytest.mark.parametrize(
    ("args", "password", "error"),
    [
        # Bytes in another encoding ($'\xff\xfe') reach argv and the
        # environment as surrogate escapes, which no hash can take.
        (("vera",), "\udcff\udcfe123456789", f"{PASSWORD_ENV}: not valid UTF-8"),
        (("v\udcffra",), PASSWORD, "name: not valid UTF-8"),
    ],
)
def test_a_name_or_password_that_is_not_utf_8_is_refused_by_name_and_creates_no_one(
    monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], password: str, error: str
) -> None:
    monkeypatch.setenv(PASSWORD_ENV, password)
    with pytest.raises(CommandError) as raised:
        run(*args, "--role", "viewer")
    assert str(raised.value) == error
    assert users() == []


def test_an_unreadable_password_file_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match=r"^--password-file: cannot read '.*missing'"):
        run("vera", "--role", "viewer", "--password-file", str(tmp_path / "missing"))
    assert users() == []


def test_an_existing_name_is_refused_without_update_and_keeps_its_password_and_role(
    tmp_path: Path,
) -> None:
    run("vera", "--role", "editor", "--password-file", password_file(tmp_path))
    before = users()
    with pytest.raises(CommandError, match=r"^name: user 'vera' exists; give --update"):
        run(
            "vera", "--role", "viewer", "--password-file", password_file(tmp_path, "other-pass-9\n")
        )
    assert users() == before
    assert signs_in("vera", PASSWORD)


def test_update_sets_the_role_and_password_of_an_existing_login(tmp_path: Path) -> None:
    run("vera", "--role", "editor", "--password-file", password_file(tmp_path))
    user = get_user_model().objects.get(username="vera")
    user.is_active = False
    user.save()
    out = run(
        "vera",
        "--role",
        "viewer",
        "--update",
        "--password-file",
        password_file(tmp_path, "new-pass-456"),
    )
    assert out == "Updated viewer login 'vera'; sign in at /login/.\n"
    assert users() == [("vera", True, ["viewer"])]
    assert signs_in("vera", "new-pass-456") and not signs_in("vera", PASSWORD)


def test_a_superuser_cannot_be_made_a_viewer(tmp_path: Path, django_user_model: Any) -> None:
    django_user_model.objects.create_superuser("root", password="root-pass-123")
    before = users()
    with pytest.raises(CommandError, match=r"^--role: user 'root' is a superuser"):
        run("root", "--role", "viewer", "--update", "--password-file", password_file(tmp_path))
    assert users() == before
    assert signs_in("root", "root-pass-123")
