"""`manage.py create_demo_user`: create or reset the demo editor login and print it."""

from __future__ import annotations

import os
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from api.management.commands._database import database_command
from api.management.commands._logins import login_name, login_password
from api.store.roles import EDITOR

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
        username = login_name(options["username"], "--username (DEMO_USER)")
        password = login_password(options["password"], "--password (DEMO_PASSWORD)")
        user, created = get_user_model().objects.get_or_create(username=username)
        user.set_password(password)
        user.is_active = True
        user.save()
        group, _ = Group.objects.get_or_create(name=EDITOR)
        user.groups.add(group)
        verb = "Created" if created else "Updated"
        self.stdout.write(f"{verb} demo editor login -> user: {username}  password: {password}")
