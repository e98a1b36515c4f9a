"""Daphne's command line, on uvloop unless EVENT_LOOP=asyncio.

`python -m config.serve -b HOST -p PORT config.asgi:application` takes
Daphne's arguments and runs Daphne. Daphne makes its event loop (Twisted's
asyncio reactor, which also runs the gRPC door and the scheduler) as
`daphne.server` is imported, from the event loop policy in force then; so
the policy has to be chosen before that import, which a setting read by
Django would be too late for. EVENT_LOOP: "uvloop" (default) or "asyncio".

uvloop is the default because under real Cortex it costs less per query:
9% less scheduler CPU over ten rounds of `cortex_bench`, the two loops in
turn (docs/performance.md, issue 17 session 21); the websocket path costs
the same on either.
"""

from __future__ import annotations

import asyncio
import os
import sys

__all__ = ["EVENT_LOOPS", "event_loop_name", "install_event_loop", "main"]

EVENT_LOOPS = ("asyncio", "uvloop")


def event_loop_name(env: os._Environ[str] | dict[str, str]) -> str:
    """The loop EVENT_LOOP names (uvloop when unset); an unknown value stops start-up by name."""
    name = env.get("EVENT_LOOP", "").strip().lower() or "uvloop"
    if name not in EVENT_LOOPS:
        raise SystemExit(f"EVENT_LOOP: unknown value {name!r}; use asyncio or uvloop")
    return name


def install_event_loop(env: os._Environ[str] | dict[str, str]) -> str:
    """Set the policy EVENT_LOOP names, and say which."""
    name = event_loop_name(env)
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
