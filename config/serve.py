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

Before Daphne starts, the database's schema is checked against the code: a
replica whose code is newer than its database started, answered /healthz
and joined the cluster, then failed every authenticated REST call (500) and
refused every websocket (403). Now it stops, naming the migrations to run.
A database that cannot be reached is not a reason to stop: the scheduler
serves from the config it loads once the database answers.

The scheduler (and its gRPC door) starts as Daphne's loop starts, not at
the first HTTP request: a cluster of real Cortex frontends and queriers
sends none.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys

__all__ = [
    "EVENT_LOOPS",
    "event_loop_name",
    "install_event_loop",
    "main",
    "migrations_state",
    "refuse_unmigrated_database",
    "warn_of_a_key_per_machine",
]

log = logging.getLogger(__name__)

EVENT_LOOPS = ("asyncio", "uvloop")


def event_loop_name(env: os._Environ[str] | dict[str, str]) -> str:
    """The loop EVENT_LOOP names (uvloop when unset); an unknown value stops start-up by name."""
    name = env.get("EVENT_LOOP", "").strip().lower() or "uvloop"
    if name not in EVENT_LOOPS:
        raise SystemExit(f"error: EVENT_LOOP: unknown value {name!r}; use asyncio or uvloop")
    return name


def install_event_loop(env: os._Environ[str] | dict[str, str]) -> str:
    """Set the policy EVENT_LOOP names, and say which."""
    name = event_loop_name(env)
    if name == "uvloop":
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return name


def migrations_state() -> tuple[list[str], list[str]]:
    """The migrations the database lacks (in the order they would run), and
    those it has that this code has not; each as `app.name`."""
    from django.db import connection

    from api.store.schema_state import unapplied_migrations, unknown_migrations

    try:
        return unapplied_migrations(), unknown_migrations()
    finally:
        # This thread runs the event loop next: it must not keep a connection.
        connection.close()


def refuse_unmigrated_database() -> None:
    """Stop start-up when the database's schema is behind the code (see the module
    doc); warn when it is ahead (a newer version migrated it)."""
    from django.db import DatabaseError

    try:
        missing, unknown = migrations_state()
    except DatabaseError as exc:
        log.warning("could not check the database's migrations (%s); starting anyway", exc)
        return
    from api.store.schema_state import ahead_message, behind_message

    if missing:
        raise SystemExit(behind_message(missing, "start again"))
    if unknown:
        log.warning("%s", ahead_message(unknown))


def main() -> None:
    install_event_loop(os.environ)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    from config.env_checks import refusals_as_one_line

    # After the loop policy: setting Django up imports Daphne's server, which
    # makes the event loop. A setting refused is one line, not a traceback.
    with refusals_as_one_line():
        django.setup()
    refuse_unmigrated_database()
    warn_of_a_key_per_machine(os.environ)
    # Creates the loop when imported, so only after the policy is set.
    from daphne.cli import CommandLineInterface  # type: ignore[import-untyped]
    from django.conf import settings
    from twisted.internet import reactor

    from config import access_log, body_limit, dead_connections, slow_readers

    access_log.install()
    body_limit.install(reactor)
    # After body_limit: its request class is the one extended.
    dead_connections.install(reactor)
    slow_readers.install(
        reactor,
        limit=settings.WEBSOCKET_UNSENT_LIMIT_BYTES,
        seconds=settings.WEBSOCKET_SLOW_READER_SECONDS,
    )

    # Daphne has no ASGI lifespan: started on the first request, the gRPC
    # door stayed closed for a cluster that speaks only gRPC (real Cortex
    # was refused until something asked for a page or /healthz). Queued on
    # the reactor's loop, this runs as soon as Daphne serves.
    reactor.callLater(0, _start_scheduler)
    sys.argv[0] = "daphne"
    CommandLineInterface.entrypoint()


def warn_of_a_key_per_machine(env: os._Environ[str] | dict[str, str]) -> None:
    """Say so when replicas (a Redis is set) sign with a key kept in VAR_DIR.

    Replicas on other machines keep keys of their own (config.secret_key):
    a session made on one is refused by another, so users are logged out
    as the load balancer moves them.
    """
    from django.conf import settings

    if settings.REDIS_URL and not env.get("SECRET_KEY", ""):
        log.warning(
            "SECRET_KEY is not set: this replica signs sessions with the key kept in "
            "VAR_DIR (%s); replicas on other machines keep their own, and refuse its "
            "sessions. Set SECRET_KEY to the same value on every replica",
            settings.VAR_DIR,
        )


def _start_scheduler() -> None:
    """The scheduler runtime, and its gRPC door, started on Daphne's running loop."""
    from config.asgi import application

    application.start()


if __name__ == "__main__":
    main()
