"""`create_demo_user`'s password refuses what token names refuse, by the one rule."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from api.store.services import api_token_issue

pytestmark = pytest.mark.django_db


def _demo_user_created(password: str) -> bool:
    try:
        call_command("create_demo_user", "--password", password, stdout=StringIO())
    except CommandError:
        return False
    return True


def _token_issued(name: str) -> bool:
    try:
        api_token_issue(name=name, role="viewer")
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(
    ("password", "found"),
    [
        ("pa\u2029ss", "U+2029 at character 3"),
        ("pa\u202ess", "U+202E at character 3"),
        ("\u2067pass", "U+2067 at character 1"),
    ],
)
def test_create_demo_user_refuses_a_password_its_printed_line_would_garble(
    password: str, found: str
) -> None:
    with pytest.raises(CommandError) as raised:
        call_command("create_demo_user", "--password", password, stdout=StringIO())
    assert str(raised.value) == (
        f"--password (DEMO_PASSWORD): must not contain control characters or line breaks ({found})"
    )
    assert not get_user_model().objects.exists()


@pytest.mark.parametrize(
    ("args", "error"),
    [
        # Bytes in another encoding ($'\xff\xfe') reach argv and the
        # environment as surrogate escapes, which no hash can take.
        (["--password", "\udcff\udcfe123456789"], "--password (DEMO_PASSWORD): not valid UTF-8"),
        (["--username", "z\udcff"], "--username (DEMO_USER): not valid UTF-8"),
    ],
)
def test_create_demo_user_refuses_a_name_or_password_that_is_not_utf_8(
    args: list[str], error: str
) -> None:
    with pytest.raises(CommandError) as raised:
        call_command("create_demo_user", *args, stdout=StringIO())
    assert str(raised.value) == error
    assert not get_user_model().objects.exists()


@pytest.mark.parametrize(
    "character",
    [
        "\x00",
        "\t",
        "\x7f",
        "\x85",
        "\u2028",
        "\u2029",
        "\u202e",
        "\u2066",
        "\u200f",
        "\u200d",
        "\u200c",
        "\u00ad",
        "\u00e9",
        " ",
    ],
)
def test_the_demo_password_and_a_token_name_refuse_the_same_characters(character: str) -> None:
    text = f"ab{character}cd"
    assert _demo_user_created(text) == _token_issued(text)
