#!/usr/bin/env python
"""Django's command-line utility for the queue inspector."""

import os
import sys

# The shell's code for "stopped by Ctrl-C" (128 + SIGINT).
INTERRUPTED = 130


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    try:
        # The import is inside: Django loading takes over a second, and a
        # Ctrl-C then would otherwise print a page of traceback.
        from django.core.management import execute_from_command_line

        execute_from_command_line(sys.argv)
    except KeyboardInterrupt:
        # Django leaves Ctrl-C to each command; one that does not handle it
        # has stopped, and the operator asked for exactly that.
        sys.exit(INTERRUPTED)


if __name__ == "__main__":
    main()
