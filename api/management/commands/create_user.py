"""`manage.py create_user NAME --role viewer|editor [--password-file PATH] [--update]`.

A person's login with the viewer or editor role (the Django group of that
name, which `api.store.roles.role_of` reads), without the admin site or a
shell. The password never comes from the command line, which any user of
the machine can read in `ps`: it is read from `--password-file` (`-` for
standard input), else the CREATE_USER_PASSWORD environment variable, else
asked for twice at the terminal. A name that is taken is refused unless
`--update` says to set its role and password. Every refusal names the
option at fault and changes nothing.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from api.management.commands._database import database_command
from api.management.commands._logins import login_name, login_password
from api.store.roles import EDITOR, VIEWER

__all__ = ["PASSWORD_ENV", "Command"]

PASSWORD_ENV = "CREATE_USER_PASSWORD"
ROLES = (VIEWER, EDITOR)


def _read_file(path: str) -> str:
    """The text of `path` (or of standard input for `-`), without its final line break."""
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as file:
                text = file.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"--password-file: cannot read {path!r}: {exc}") from None
    # `echo secret > file` adds one line break; anything after it is a second
    # line, which login_password refuses (a line break) rather than drops.
    return text[:-1] if text.endswith("\n") else text


def _ask() -> str:
    if not sys.stdin.isatty():
        raise CommandError(
            f"no password: give --password-file PATH (- for standard input), set {PASSWORD_ENV}, "
            "or run this in a terminal to be asked"
        )
    first = getpass.getpass("Password: ")
    if getpass.getpass("Password (again): ") != first:
        raise CommandError("password: the two entries differ")
    return first


def _password(options: dict[str, Any]) -> tuple[str, str]:
    """The password and where it came from (for error messages)."""
    if options["password_file"] is not None:
        return _read_file(options["password_file"]), "--password-file"
    if PASSWORD_ENV in os.environ:
        return os.environ[PASSWORD_ENV], PASSWORD_ENV
    return _ask(), "password"


class Command(BaseCommand):
    help = (
        "Create a login with the viewer or editor role. The password is read from "
        f"--password-file, else {PASSWORD_ENV}, else asked for; never from the command line."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="the user name to sign in with")
        parser.add_argument("--role", required=True, choices=ROLES)
        parser.add_argument(
            "--password-file",
            metavar="PATH",
            help="read the password from this file (one line); - for standard input",
        )
        # Refused by name (create_demo_user takes one, so it will be tried):
        # without it argparse read `--password X` as an abbreviation of
        # --password-file and echoed X in its "cannot read" error.
        parser.add_argument("--password", help=argparse.SUPPRESS)
        parser.add_argument(
            "--update",
            action="store_true",
            help="if the user exists, set its role and password (and let it sign in again)",
        )

    @database_command  # outside the transaction: it has been rolled back when it reports
    @transaction.atomic
    def handle(self, *args: Any, **options: Any) -> None:
        if options["password"] is not None:
            raise CommandError(
                "--password: a password on the command line is seen by every user of the "
                f"machine (ps); use --password-file, {PASSWORD_ENV} or the prompt"
            )
        name = login_name(options["name"], "name")
        role = options["role"]
        model = get_user_model()
        user = model.objects.select_for_update().filter(**{model.USERNAME_FIELD: name}).first()
        if user is not None and not options["update"]:
            raise CommandError(
                f"name: user {name!r} exists; give --update to set its role and password"
            )
        if user is not None and user.is_superuser and role != EDITOR:
            # role_of makes every superuser an editor, whatever its groups say.
            raise CommandError(
                f"--role: user {name!r} is a superuser, an editor whatever its groups; "
                "take its superuser status away in /admin/ first"
            )
        raw, source = _password(options)
        password = login_password(raw, source)
        created = user is None
        if created:
            user = model(**{model.USERNAME_FIELD: name})
        try:
            validate_password(password, user)
        except ValidationError as exc:
            raise CommandError(f"{source}: {' '.join(exc.messages)}") from None
        user.set_password(password)
        user.is_active = True
        user.save()
        # One role: the other role's group goes, so a viewer is not still an editor.
        user.groups.remove(*Group.objects.filter(name__in=ROLES).exclude(name=role))
        user.groups.add(Group.objects.get_or_create(name=role)[0])
        verb = "Created" if created else "Updated"
        self.stdout.write(f"{verb} {role} login {name!r}; sign in at /login/.")
