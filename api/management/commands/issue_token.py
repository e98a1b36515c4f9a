"""`manage.py issue_token NAME --role ROLE`: print a new API token once."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from api.store.models import ApiToken
from api.store.services import api_token_issue

__all__ = ["Command"]


class Command(BaseCommand):
    help = "Issue an API token and print it; only its hash is stored, so copy it now."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="what the token is for, e.g. frontend-1")
        parser.add_argument("--role", required=True, choices=ApiToken.Role.values)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            token, plaintext = api_token_issue(name=options["name"], role=options["role"])
        except ValueError as exc:
            raise CommandError(f"name: {exc}") from exc
        self.stderr.write(
            f"Issued {token.role} token #{token.pk} {token.name!r}; it is shown once:"
        )
        self.stdout.write(plaintext)
