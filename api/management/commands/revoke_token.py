"""`manage.py revoke_token ID ... | --name NAME`: revoke API tokens for good."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from api.store.exceptions import NotFound
from api.store.models import ApiToken
from api.store.services import api_token_revoke

__all__ = ["Command"]


class Command(BaseCommand):
    help = (
        "Revoke API tokens by id (the #N issue_token printed) or by name. Servers close "
        "the sockets open with them at their next config reconcile (CONFIG_RECONCILE_SECONDS, "
        "5 s by default); revoking in the admin closes them at once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("ids", nargs="*", type=int, help="token ids, as issue_token prints")
        parser.add_argument("--name", help="revoke every token of this name")

    def handle(self, *args: Any, **options: Any) -> None:
        ids: list[int] = options["ids"]
        name: str | None = options["name"]
        if bool(ids) == (name is not None):
            raise CommandError("give token ids or --name, not both or neither")
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
