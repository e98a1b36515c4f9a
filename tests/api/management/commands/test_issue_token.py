"""`issue_token`'s name as an operator types it: refused naming the argument and the character."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from api.store.models import ApiToken

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
