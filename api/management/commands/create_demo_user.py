"""`manage.py create_demo_user`: create or reset the demo editor login and print it."""

from __future__ import annotations

import os
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from api.management.commands._database import database_command
from api.store.roles import EDITOR
from api.store.tokens import unprintable_character

__all__ = ["Command"]


class Command(BaseCommand):
    help = "Create (or reset the password of) the demo editor login and print it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--username",
            default=os.environ.get("DEMO_USER", "demo"),
            help="default: DEMO_USER, else demo",
        )
        parser.add_argument(
            "--password",
            default=os.environ.get("DEMO_PASSWORD", "demo-password"),
            help="default: DEMO_PASSWORD, else demo-password",
        )

    @database_command  # outside the transaction: it has been rolled back when it reports
    @transaction.atomic
    def handle(self, *args: Any, **options: Any) -> None:
        username = _login_name(options["username"])
        password = _password(options["password"])
        user, created = get_user_model().objects.get_or_create(username=username)
        user.set_password(password)
        user.is_active = True
        user.save()
        group, _ = Group.objects.get_or_create(name=EDITOR)
        user.groups.add(group)
        verb = "Created" if created else "Updated"
        self.stdout.write(f"{verb} demo editor login -> user: {username}  password: {password}")


def _login_name(raw: str) -> str:
    """The name as the login form will look it up, or CommandError saying why it cannot be one.

    get_or_create skips the model's validation, and the login form
    NFKC-normalises what is typed (as create_user does): a name the form cannot
    reproduce (blank, spaces, too long for the column) would print a login
    that never works.
    """
    model = get_user_model()
    field = model._meta.get_field(model.USERNAME_FIELD)
    name = model.normalize_username(raw)
    try:
        field.clean(name, None)
    except ValidationError as exc:
        raise CommandError(f"--username (DEMO_USER): {raw!r}: {' '.join(exc.messages)}") from None
    return str(name)


def _password(raw: str) -> str:
    """The password, or CommandError saying why no one could sign in with it."""
    if not raw:
        # The login form requires a password, so this login could never be used.
        raise CommandError("--password (DEMO_PASSWORD): must not be empty")
    # The characters token names refuse: printed, they split or garble the
    # one-line login (or reorder it, so what is read is not what to type),
    # and a password field drops line breaks as they are pasted, so such a
    # password could never be typed in. Named by position and code point:
    # the password itself stays off the screen.
    unprintable = unprintable_character(raw)
    if unprintable is not None:
        raise CommandError(
            "--password (DEMO_PASSWORD): must not contain control characters or "
            f"line breaks ({unprintable})"
        )
    return raw
