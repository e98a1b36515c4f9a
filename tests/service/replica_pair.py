"""Two real scheduler replicas on one PostgreSQL database and one Redis, for tests.

Shared by the scale-out service tests and the two-replica browser test. The
database is a fresh one on TEST_DATABASE_URL's server, dropped at the end;
Redis keys carry a per-run prefix, deleted at the end. tests/servers.py
starts throwaway servers and sets both variables unless they are set already;
without them the tests fail, saying so: a scale-out feature that is never
exercised must not pass quietly.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import pytest

from loadgen.daphne_process import DaphneProcess

__all__ = ["replica", "replica_pair", "require_servers", "scale_out_env", "started_pair"]


def require_servers() -> tuple[str, str]:
    """TEST_DATABASE_URL and TEST_REDIS_URL, or a test failure naming them."""
    database = os.environ.get("TEST_DATABASE_URL", "")
    redis = os.environ.get("TEST_REDIS_URL", "")
    if not (database and redis):
        pytest.fail(
            "scale-out tests need PostgreSQL and Redis, and TEST_DATABASE_URL or "
            "TEST_REDIS_URL is unset (tests/servers.py sets both when it starts throwaway "
            "servers for the collected tests; set them to use servers of your own)",
            pytrace=False,
        )
    return database, redis


@contextmanager
def _fresh_database(server_url: str) -> Iterator[str]:
    import psycopg

    name = f"qi_scale_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(server_url)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(server_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def scale_out_env() -> Iterator[dict[str, str]]:
    """DATABASE_URL (a fresh database) and CHANNEL_PREFIX (a fresh Redis namespace)."""
    server_url, redis_url = require_servers()
    prefix = f"qi-test-{uuid.uuid4().hex[:8]}"
    with _fresh_database(server_url) as database_url:
        try:
            yield {"DATABASE_URL": database_url, "CHANNEL_PREFIX": prefix}
        finally:
            import redis

            client = redis.Redis.from_url(redis_url)
            keys = list(client.scan_iter(match=f"{prefix}*"))
            if keys:
                client.delete(*keys)
            client.close()


def replica(env: dict[str, str], name: str, **extra: str) -> DaphneProcess:
    """A replica named `name` (REPLICA_ID); config reconcile only every 300 s."""
    settings = {**env, "REPLICA_ID": name, "CONFIG_RECONCILE_SECONDS": "300", **extra}
    return DaphneProcess(extra_env=settings)


@contextmanager
def started_pair(
    env: dict[str, str], **extra: str
) -> Iterator[tuple[DaphneProcess, DaphneProcess]]:
    """Replicas "replica-a" and "replica-b" on `env` and Redis, with `extra`
    settings, started; both stopped and cleaned up on the way out."""
    redis_url = require_servers()[1]
    a = replica(env, "replica-a", REDIS_URL=redis_url, **extra)
    b = replica(env, "replica-b", REDIS_URL=redis_url, **extra)
    try:
        a.start()
        b.start()
        yield a, b
    finally:
        a.cleanup()
        b.cleanup()


@contextmanager
def replica_pair(**extra: str) -> Iterator[tuple[DaphneProcess, DaphneProcess]]:
    """`started_pair` on a fresh scale-out env of its own."""
    with scale_out_env() as env, started_pair(env, **extra) as pair:
        yield pair
