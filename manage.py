#!/usr/bin/env python
"""Django's command-line utility for the queue inspector."""

import contextlib
import os
import sys

# The shell's code for "stopped by Ctrl-C" (128 + SIGINT).
INTERRUPTED = 130


def load_settings(argv: list[str]) -> None:
    """Load the settings as Django's command line first does (after its --settings
    and --pythonpath), so that a refusal stops here as one line. Left to Django,
    the refusal was kept and raised again from wherever a command next read a
    setting: a page of traceback, under `KeyError: 'issue_token'` for a command
    of this project's apps."""
    from django.conf import settings
    from django.core.management.base import CommandError, CommandParser, handle_default_options

    from config.env_checks import refusals_as_one_line

    parser = CommandParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--settings")
    parser.add_argument("--pythonpath")
    parser.add_argument("args", nargs="*")
    try:
        options, _ = parser.parse_known_args(argv[2:])
        handle_default_options(options)
    except CommandError:
        pass  # Django ignores them here too, and reports them with the command.
    # An ImportError Django reports itself (`help` still lists its own commands).
    with refusals_as_one_line(), contextlib.suppress(ImportError):
        settings.INSTALLED_APPS  # noqa: B018 - reading it loads the settings


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    try:
        # The import is inside: Django loading takes over a second, and a
        # Ctrl-C then would otherwise print a page of traceback.
        from django.core.management import execute_from_command_line

        load_settings(sys.argv)
        execute_from_command_line(sys.argv)
    except KeyboardInterrupt:
        # Django leaves Ctrl-C to each command; one that does not handle it
        # has stopped, and the operator asked for exactly that.
        sys.exit(INTERRUPTED)


if __name__ == "__main__":
    main()
