"""`manage.py loadgen_slowdown FACTOR`: slow the load generator's store-gateway queries."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from loadgen.demo_traffic import MAX_SLOWDOWN, read_slowdown, write_slowdown

__all__ = ["Command"]


class Command(BaseCommand):
    help = (
        "Set the store-gateway slowdown factor of a running `manage.py loadgen` "
        "(1 = normal; it re-reads the factor every second)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("factor", type=float, nargs="?", help="omit to print the current one")

    def handle(self, *args: Any, **options: Any) -> None:
        factor = options["factor"]
        if factor is None:
            self.stdout.write(f"{read_slowdown():g}")
            return
        if not 0 < factor <= MAX_SLOWDOWN:
            raise CommandError(
                f"factor: must be above 0 and at most {MAX_SLOWDOWN:g}, not {factor}"
            )
        try:
            path = write_slowdown(factor)
        except OSError as exc:
            raise CommandError(f"factor: cannot be written ({exc})") from None
        self.stdout.write(f"store-gateway slowdown set to {factor:g} ({path})")
