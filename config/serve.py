"""Daphne's command line, on uvloop when EVENT_LOOP=uvloop.

`python -m config.serve -b HOST -p PORT config.asgi:application` takes
Daphne's arguments and runs Daphne. Daphne makes its event loop (Twisted's
asyncio reactor, which also runs the gRPC door and the scheduler) as
`daphne.server` is imported, from the event loop policy in force then; so
the policy has to be chosen before that import, which a setting read by
Django would be too late for. EVENT_LOOP: "asyncio" (default) or "uvloop".
"""

from __future__ import annotations

import asyncio
import os
import sys

__all__ = ["EVENT_LOOPS", "install_event_loop", "main"]

EVENT_LOOPS = ("asyncio", "uvloop")


def install_event_loop(env: os._Environ[str] | dict[str, str]) -> str:
    """Set the policy EVENT_LOOP names; an unknown value stops start-up by name."""
    name = env.get("EVENT_LOOP", "").strip().lower() or "asyncio"
    if name not in EVENT_LOOPS:
        raise SystemExit(f"EVENT_LOOP: unknown value {name!r}; use asyncio or uvloop")
    if name == "uvloop":
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return name


def main() -> None:
    install_event_loop(os.environ)
    # Creates the loop when imported, so only after the policy is set.
    from daphne.cli import CommandLineInterface  # type: ignore[import-untyped]

    sys.argv[0] = "daphne"
    CommandLineInterface.entrypoint()


if __name__ == "__main__":
    main()
