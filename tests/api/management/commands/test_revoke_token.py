"""`revoke_token`'s ids as an operator types them: a garbled one is refused by argparse, by name."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from api.store.services import api_token_authenticate, api_token_issue

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


# Sequences reset, so the kept token is #1, the id the Arabic-Indic one would
# name if it were read as a number.
@pytest.mark.django_db(reset_sequences=True)
@pytest.mark.parametrize(
    "typed",
    [
        "99999999999999999999999",  # past the 64-bit key: OverflowError from the driver
        "9223372036854775808",
        "0",
        "-1",
        "1.0",
        "\u0661",  # an Arabic-Indic one, which int() reads as 1
        "",
    ],
)
def test_revoke_token_refuses_an_id_that_is_no_token_id_naming_the_argument(typed: str) -> None:
    token, plaintext = api_token_issue(name="kept", role="querier")
    assert token.pk == 1
    with pytest.raises(CommandError, match=rf"^Error: argument ids: '{typed}' is not a token id"):
        run("revoke_token", typed)
    assert api_token_authenticate(plaintext) is not None


def test_revoke_token_takes_an_id_as_issue_token_printed_it_with_its_hash() -> None:
    token, plaintext = api_token_issue(name="q", role="querier")
    assert run("revoke_token", f"#{token.pk}") == f"Revoked querier token #{token.pk} 'q'\n"
    assert api_token_authenticate(plaintext) is None


def test_revoke_token_refuses_a_name_that_is_not_utf_8_naming_the_option() -> None:
    # Bytes in another encoding ($'\xff\xfe') reach argv as surrogate escapes.
    token, plaintext = api_token_issue(name="kept", role="querier")
    with pytest.raises(CommandError) as raised:
        run("revoke_token", "--name", "\udcff\udcfe")
    assert str(raised.value) == "--name: not valid UTF-8"
    assert api_token_authenticate(plaintext) is not None
