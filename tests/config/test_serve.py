"""`python -m config.serve`: Daphne on the event loop EVENT_LOOP names."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from django.db import OperationalError

from api.wire.grpc.clients import CortexFrontend, QuerierWorker, get_request
from config import serve
from config.serve import event_loop_name, install_event_loop, warn_of_a_key_per_machine
from loadgen.daphne_process import BASE_DIR, DaphneProcess
from scheduler_core.pb import schedulerpb_pb2 as pb


def test_an_unknown_event_loop_stops_start_up_naming_the_variable() -> None:
    with pytest.raises(SystemExit, match="EVENT_LOOP: unknown value 'tokio'"):
        install_event_loop({"EVENT_LOOP": "tokio"})


def test_no_event_loop_setting_runs_uvloop_and_asyncio_stays_a_choice() -> None:
    assert event_loop_name({}) == "uvloop"
    assert event_loop_name({"EVENT_LOOP": " "}) == "uvloop"
    assert event_loop_name({"EVENT_LOOP": "AsyncIO"}) == "asyncio"


def test_a_database_behind_the_code_stops_start_up_naming_the_migrations_to_run() -> None:
    server = DaphneProcess(grpc=False)
    try:
        server.manage("migrate", "--noinput", "-v0")
        server.manage("migrate", "api", "0004", "--noinput", "-v0")  # as before an upgrade
        started = subprocess.run(
            [sys.executable, "-m", "config.serve", "-b", "127.0.0.1", "-p", str(server.port)]
            + ["config.asgi:application"],
            env=server.env,
            cwd=BASE_DIR,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert started.returncode == 1
        assert "the database is behind this code: 1 migration(s) not applied" in started.stderr
        assert "(api.0005_revision_tenants); run `python manage.py migrate`" in started.stderr
    finally:
        server.cleanup()


def test_a_database_a_newer_version_migrated_is_warned_of_and_served(tmp_path: Path) -> None:
    server = DaphneProcess(grpc=False, log_path=tmp_path / "daphne.log")
    try:
        server.manage("migrate", "--noinput", "-v0")
        with contextlib.closing(sqlite3.connect(server.tmp / "db.sqlite3")) as db, db:
            db.execute(
                "INSERT INTO django_migrations (app, name, applied) "
                "VALUES ('api', '0099_from_a_newer_version', '2026-12-07 00:00:00')"
            )
        server.start()
        log = (tmp_path / "daphne.log").read_text()
        assert (
            "the database is ahead of this code: 1 migration(s) applied that it does not "
            "have (api.0099_from_a_newer_version)" in log
        )
        assert "`python manage.py migrate api 0005_revision_tenants`" in log
    finally:
        server.cleanup()


def test_a_database_that_cannot_be_reached_at_start_up_does_not_stop_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unreachable() -> tuple[list[str], list[str]]:
        raise OperationalError("could not connect to server")

    monkeypatch.setattr(serve, "migrations_state", unreachable)
    serve.refuse_unmigrated_database()


# An empty EVENT_LOOP is the default: the variable cannot be unset through
# DaphneProcess, which starts from this process's environment.
@pytest.fixture(scope="module", params=[("", "uvloop"), ("asyncio", "asyncio")], ids=lambda p: p[1])
def daphne_on(request: pytest.FixtureRequest) -> Iterator[tuple[DaphneProcess, str]]:
    setting, loop = request.param
    server = DaphneProcess(extra_env={"EVENT_LOOP": setting})
    try:
        server.start()
        yield server, loop
    finally:
        server.cleanup()


async def test_daphne_serves_the_grpc_door_on_uvloop_by_default_and_on_asyncio_when_asked(
    daphne_on: tuple[DaphneProcess, str],
) -> None:
    server, loop_name = daphne_on
    address = f"127.0.0.1:{server.grpc_port}"
    frontend = await CortexFrontend(address).start()
    channel = None
    try:
        for _ in range(100):  # the door opens with the runtime, just after /healthz
            try:
                loop = await frontend.open_loop()
                break
            except grpc.aio.AioRpcError:
                await asyncio.sleep(0.2)
        else:
            raise AssertionError("the gRPC door never answered")
        assert (
            await loop.enqueue(1, "tenant-uv", get_request("/api/v1/query", [("query", "up")]))
            == pb.OK
        )
        channel = grpc.aio.insecure_channel(address)
        worker = await QuerierWorker(channel, "q-uv").open()
        message = await worker.next(timeout=20)
        await worker.answer(message, body=b'{"status":"success"}')
        result = await frontend.result(1, timeout=20)
    finally:
        await frontend.close()
        if channel is not None:
            await channel.close()
    assert result.code == 200
    assert f"lean server, {loop_name} loop)" in server.log()


async def test_the_grpc_door_opens_without_any_http_request() -> None:
    """A cluster of real Cortex clients sends none: the door used to wait for one."""
    server = DaphneProcess()
    try:
        server.start(healthz=False)
        frontend = await CortexFrontend(f"127.0.0.1:{server.grpc_port}").start()
        try:
            for _ in range(150):
                try:
                    await frontend.open_loop()
                    break
                except grpc.aio.AioRpcError:
                    await asyncio.sleep(0.2)
            else:
                raise AssertionError("the gRPC door never opened:\n" + server.log())
        finally:
            await frontend.close()
        assert "GET /" not in server.log()  # nothing but gRPC reached it
    finally:
        server.cleanup()


@pytest.mark.parametrize(
    ("redis", "key", "warned"),
    [("redis://r:6379/0", "", True), ("redis://r:6379/0", "k" * 50, False), ("", "", False)],
    ids=["replicas-no-key", "replicas-key", "one-process"],
)
def test_replicas_signing_with_a_key_kept_in_var_dir_are_warned(
    redis: str, key: str, warned: bool, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings.REDIS_URL = redis
    with caplog.at_level(logging.WARNING, logger="config.serve"):
        warn_of_a_key_per_machine({"SECRET_KEY": key})
    assert ("Set SECRET_KEY to the same value on every replica" in caplog.text) is warned
