"""`manage.py revoke_token ID ... | --name NAME`: revoke API tokens for good."""

from __future__ import annotations

import argparse
import re
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from api.management.commands._database import database_command
from api.store.exceptions import NotFound
from api.store.models import ApiToken
from api.store.services import api_token_revoke
from api.store.tokens import valid_utf8

__all__ = ["Command"]


# Ids are the database's 64-bit keys: a longer number is no token, and the
# driver raised OverflowError (a traceback) binding it to the query. ASCII
# digits only: int() also reads other scripts' digits. "#5" as issue_token
# printed it is taken too.
_TOKEN_ID = re.compile(r"#?([0-9]{1,19})", re.ASCII)
_MAX_ID = 2**63 - 1


def _token_id(text: str) -> int:
    """A token id as argparse's `type`: its error reads "argument ids: ..."."""
    match = _TOKEN_ID.fullmatch(text.strip())
    if match is None or not 1 <= int(match[1]) <= _MAX_ID:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a token id: a whole number of 1 or more, the #N issue_token printed"
        )
    return int(match[1])


class Command(BaseCommand):
    help = (
        "Revoke API tokens by id (the #N issue_token printed) or by name. Servers close "
        "the sockets open with them at their next config reconcile (CONFIG_RECONCILE_SECONDS, "
        "5 s by default); revoking in the admin closes them at once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "ids", nargs="*", type=_token_id, help="token ids, as issue_token prints"
        )
        parser.add_argument("--name", help="revoke every token of this name")

    @database_command
    def handle(self, *args: Any, **options: Any) -> None:
        ids: list[int] = options["ids"]
        name: str | None = options["name"]
        if bool(ids) == (name is not None):
            raise CommandError("give token ids or --name, not both or neither")
        if name is not None and not valid_utf8(name):
            # The driver failed on it binding the query, in a traceback.
            raise CommandError("--name: not valid UTF-8")
        tokens = ApiToken.objects.order_by("pk")
        found = tokens.filter(name=name) if name is not None else tokens.filter(pk__in=ids)
        found_ids = list(found.values_list("pk", flat=True))
        if name is not None and not found_ids:
            raise CommandError(f"name: no token named {name!r}")
        missing = sorted(set(ids) - set(found_ids))
        if missing:
            # Checked first, so a typo among several ids revokes none of them.
            raise CommandError(f"ids: no token {', '.join(f'#{pk}' for pk in missing)}")
        # Revoking one again still closes its sockets (a lost notice), but the
        # line must not read as if it had been working until now.
        already = set(found.filter(revoked=True).values_list("pk", flat=True))
        try:
            # One transaction: all of them or none; the servers hear after commit.
            with transaction.atomic():
                revoked = [api_token_revoke(token_id=pk) for pk in found_ids]
        except NotFound as exc:  # deleted since the check
            raise CommandError(f"ids: {exc}") from exc
        for token in revoked:
            note = " (it was revoked already)" if token.pk in already else ""
            self.stdout.write(f"Revoked {token.role} token #{token.pk} {token.name!r}{note}")
