"""`create_demo_user` and `seed_demo_config`: what `make demo` runs before the server starts.

The login it prints must work in the login form, whatever DEMO_USER and
DEMO_PASSWORD say; a value that could never sign in is refused up front,
naming the option, and nobody is created.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def signs_in(username: str, password: str) -> bool:
    """Through the real login form, as the person reading the printed line would."""
    response = Client().post("/login/", {"username": username, "password": password})
    return response.status_code == 302


@pytest.mark.parametrize(
    ("username", "error"),
    [
        ("", "cannot be blank"),
        ("a b", "Enter a valid username"),
        (" demo", "Enter a valid username"),
        ("x/y", "Enter a valid username"),
        ("a" * 151, "at most 150 characters"),
        ("a\nb", "Enter a valid username"),
        ("a\tb", "Enter a valid username"),
    ],
)
def test_create_demo_user_refuses_a_name_no_one_could_sign_in_with_and_creates_no_one(
    monkeypatch: pytest.MonkeyPatch, username: str, error: str
) -> None:
    monkeypatch.setenv("DEMO_USER", username)
    with pytest.raises(CommandError, match=rf"^--username \(DEMO_USER\): .*{error}"):
        run("create_demo_user")
    assert not get_user_model().objects.exists()


def test_create_demo_user_refuses_an_empty_password_and_creates_no_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DEMO_PASSWORD", "")
    with pytest.raises(CommandError, match=r"^--password \(DEMO_PASSWORD\): must not be empty"):
        run("create_demo_user")
    assert not get_user_model().objects.exists()


@pytest.mark.parametrize(
    ("password", "found"),
    [
        ("a\nb", "U+000A at character 2"),
        ("pass\r", "U+000D at character 5"),
        ("\tpass", "U+0009 at character 1"),
        ("pa\x1bss", "U+001B at character 3"),
        ("pa\x7fss", "U+007F at character 3"),
        ("pa\x85ss", "U+0085 at character 3"),
        ("pa\u2028ss", "U+2028 at character 3"),
    ],
)
def test_create_demo_user_refuses_a_password_with_a_control_character_and_creates_no_one(
    password: str, found: str
) -> None:
    with pytest.raises(CommandError) as raised:
        run("create_demo_user", "--password", password)
    assert str(raised.value) == (
        f"--password (DEMO_PASSWORD): must not contain control characters or line breaks ({found})"
    )
    assert not get_user_model().objects.exists()


def test_the_login_create_demo_user_prints_from_the_environment_signs_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Full-width letters: the login form NFKC-normalises them to "demo2".
    monkeypatch.setenv("DEMO_USER", "\uff44\uff45\uff4d\uff4f2")
    monkeypatch.setenv("DEMO_PASSWORD", "  spaced out  ")
    printed = run("create_demo_user")
    assert printed == "Created demo editor login -> user: demo2  password:   spaced out  \n"
    assert signs_in("demo2", "  spaced out  ")
