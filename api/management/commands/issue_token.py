"""`manage.py issue_token NAME --role ROLE [--expires-in D | --expires-at T]`: a token, once."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from api.management.commands._database import database_command
from api.management.commands._interrupts import interrupts_deferred
from api.store.models import ApiToken
from api.store.services import api_token_issue
from api.store.tokens import TokenExpiryError

__all__ = ["Command"]

_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# ASCII digits only (Python's int() also takes other scripts' digits), and
# few enough that int() never meets its length limit.
_DURATION = re.compile(r"([0-9]{1,12})([smhd])", re.ASCII)


def _plain(text: str) -> str:
    return text


def _expires_in(text: str) -> datetime:
    """Now plus a duration such as `30d`, `12h`, `90m` or `45s`."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise TokenExpiryError(
            f"{text!r} is not a duration: a whole number and one unit of s, m, h or d, e.g. 30d"
        )
    seconds = int(match[1]) * _UNIT_SECONDS[match[2]]
    if seconds == 0:
        raise TokenExpiryError("must be longer than 0; leave it out for a token that never expires")
    try:
        return timezone.now() + timedelta(seconds=seconds)
    except OverflowError as exc:
        raise TokenExpiryError(f"{text!r} is out of range (years 1 to 9999)") from exc


def _expires_at(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError as exc:
        raise TokenExpiryError(
            f"{text!r} is not an ISO-8601 time, e.g. 2027-01-31T00:00:00Z"
        ) from exc


def _expiry(options: dict[str, Any]) -> datetime | None:
    if options["expires_in"] is not None:
        return _expires_in(options["expires_in"])
    if options["expires_at"] is not None:
        return _expires_at(options["expires_at"])
    return None


class Command(BaseCommand):
    help = (
        "Issue an API token and print it; only its hash is stored, so copy it now. "
        "Without --expires-in or --expires-at it works until revoked."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="what the token is for, e.g. frontend-1")
        parser.add_argument("--role", required=True, choices=ApiToken.Role.values)
        expiry = parser.add_mutually_exclusive_group()
        expiry.add_argument(
            "--expires-in",
            metavar="DURATION",
            help="expire this long from now: a whole number and s, m, h or d, e.g. 30d",
        )
        expiry.add_argument(
            "--expires-at",
            metavar="TIME",
            help="expire at this ISO-8601 time with a time zone, e.g. 2027-01-31T00:00:00Z",
        )

    @database_command
    def handle(self, *args: Any, **options: Any) -> None:
        # argparse lets at most one of the two through.
        option = "--expires-in" if options["expires_in"] is not None else "--expires-at"
        # Ctrl-C while the INSERT waits (a locked database) would stop the
        # command after the token was stored but before it was shown: a live
        # token no one has. It is taken once the token is printed.
        with interrupts_deferred():
            try:
                token, plaintext = api_token_issue(
                    name=options["name"], role=options["role"], expires_at=_expiry(options)
                )
            except TokenExpiryError as exc:
                raise CommandError(f"{option}: {exc}") from exc
            except ValueError as exc:
                raise CommandError(f"name: {exc}") from exc
            # On stderr so that stdout is the token alone (TOKEN=$(...)), in
            # plain text: Django paints stderr as errors on a terminal.
            if token.expires_at is not None:
                self.stderr.write(
                    f"It expires at {token.expires_at.isoformat(timespec='seconds')}.", _plain
                )
            self.stderr.write(
                f"Issued {token.role} token #{token.pk} {token.name!r}; it is shown once:", _plain
            )
            self.stdout.write(plaintext)
