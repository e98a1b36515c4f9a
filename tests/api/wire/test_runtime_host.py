"""The runtime host: config applied after commit and its reconciles recorded, fan-out, shutdown."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.db import OperationalError

from api.store import selectors
from api.store.models import ConfigRevision
from api.store.services import settings_update, tenant_put
from api.wire import runtime_host
from scheduler_core.model import Request
from tests.polling import until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
async def reconciling(settings: Any) -> AsyncIterator[Any]:
    """A started host whose reconcile loop runs every 10 ms; shut down after the test."""
    settings.GRPC_PORT = 0
    settings.CONFIG_RECONCILE_SECONDS = 0.01
    host = await runtime_host.ensure_started()
    try:
        yield host
    finally:
        await runtime_host.shutdown(drain_timeout=0)


def put_tenant(tenant_id: str, config: dict[str, Any], version: int | None) -> Any:
    return tenant_put(
        tenant_id=tenant_id,
        config=config,
        expected_version=version,
        author=None,
        source=ConfigRevision.Source.CLI,
    )


async def test_a_committed_tenant_change_reaches_the_runtime_without_a_restart(host: Any) -> None:
    tenant = await database_sync_to_async(put_tenant)("t1", {"max_queriers_per_tenant": 2}, None)
    await until(lambda: host.runtime.tenant_limits("t1").max_queriers == 2)
    await database_sync_to_async(put_tenant)("t1", {"max_queriers_per_tenant": 5}, tenant.version)
    await until(lambda: host.runtime.tenant_limits("t1").max_queriers == 5)
    assert host.applied_version == tenant.version + 1


async def test_a_settings_change_switches_the_live_layout(host: Any) -> None:
    def change() -> None:
        settings_update(
            changes={"layout": "component-first"},
            expected_version=None,
            author=None,
            source=ConfigRevision.Source.CLI,
        )

    host.runtime.enqueue(Request(id="kept", tenant_id="t"))
    await database_sync_to_async(change)()
    await until(lambda: host.runtime.config.layout == "component-first")
    assert len(host.runtime.queue) == 1


async def test_ensure_started_returns_the_same_host_to_concurrent_callers(host: Any) -> None:
    again = await asyncio.gather(*(runtime_host.ensure_started() for _ in range(3)))
    assert all(h is host for h in again)
    assert runtime_host.get_runtime() is host.runtime


async def test_shutdown_fails_the_queued_requests_back_through_their_handles(settings: Any) -> None:
    settings.GRPC_PORT = 0
    failures: list[tuple[str, str]] = []

    class Handle:
        def on_failed(self, request: Request, reason: str) -> None:
            failures.append((request.id, reason))

    host = await runtime_host.ensure_started()
    host.runtime.enqueue(Request(id="left", tenant_id="t", payload=Handle()))
    await runtime_host.shutdown(drain_timeout=0)
    assert failures == [("left", "scheduler shutting down")]
    assert not runtime_host.started()


async def test_a_registered_background_loop_runs_from_the_hosts_start_to_its_stop(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.GRPC_PORT = 0
    monkeypatch.setattr(runtime_host, "_backgrounds", dict(runtime_host._backgrounds))
    passes: dict[str, list[str]] = {"early": [], "late": []}

    def loop(name: str) -> Any:
        async def run() -> None:
            try:
                while True:
                    passes[name].append("pass")
                    await asyncio.sleep(0.01)
            finally:
                passes[name].append("stopped")

        return run

    runtime_host.add_background("early", loop("early"))
    runtime_host.add_background("early", loop("late"))  # one loop per name
    await runtime_host.ensure_started()
    runtime_host.add_background("late", loop("late"))  # a running host starts it at once
    await until(lambda: len(passes["early"]) >= 2 and len(passes["late"]) >= 2)
    await runtime_host.shutdown(drain_timeout=0)
    assert passes["early"][-1] == passes["late"][-1] == "stopped"
    assert passes["late"].count("stopped") == 1


async def test_failed_config_reconciles_are_counted_and_the_last_success_kept_until_one_passes(
    reconciling: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = reconciling
    started = host.reconciles.last_success  # the start's reconcile
    assert started is not None and host.reconciles.failures == 0

    def unreachable() -> int:
        raise OperationalError("could not connect to server")

    with monkeypatch.context() as patch:
        patch.setattr(selectors, "config_version_get", unreachable)
        await until(lambda: host.reconciles.failures >= 2)
        assert host.reconciles.last_success == started
    await until(lambda: host.reconciles.last_success > started)


async def test_the_token_recheck_runs_while_config_reconciles_fail(
    reconciling: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = reconciling
    checks: list[str] = []

    async def checked() -> int:
        checks.append("token check")
        return 0

    def will_not_apply(version: int) -> None:
        raise ValueError("the stored config does not apply")

    monkeypatch.setattr(host, "close_revoked_sockets", checked)
    monkeypatch.setattr(host, "reconcile", will_not_apply)
    await until(lambda: host.reconciles.failures >= 2 and len(checks) >= 2)


async def test_a_failed_token_recheck_is_not_counted_as_a_failed_config_reconcile(
    reconciling: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = reconciling
    checks: list[str] = []

    async def broken() -> int:
        checks.append("token check")
        raise OperationalError("api_token table locked")

    monkeypatch.setattr(host, "close_revoked_sockets", broken)
    stamp = host.reconciles.last_success
    assert stamp is not None
    await until(lambda: len(checks) >= 2 and host.reconciles.last_success > stamp)
    assert host.reconciles.failures == 0


async def test_a_helper_that_lost_its_cancel_delays_the_stop_by_the_bound_not_for_ever(
    settings: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """As redis-py may do: the cancel absorbed, the loop going on as if nothing had happened."""
    settings.GRPC_PORT = 0
    monkeypatch.setattr(runtime_host, "_backgrounds", dict(runtime_host._backgrounds))
    monkeypatch.setattr(runtime_host, "HELPERS_STOP_SECONDS", 0.2)
    absorbed: list[str] = []
    released = asyncio.Event()

    async def deaf() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            absorbed.append("cancel")
        await released.wait()  # the test's, after the stop: it ends then

    runtime_host.add_background("deaf loop", deaf)
    await runtime_host.ensure_started()
    await asyncio.wait_for(runtime_host.shutdown(drain_timeout=0), 5)
    assert absorbed == ["cancel"]
    assert "stop: deaf loop still running 0s after their cancel" in caplog.text
    assert not runtime_host.started()
    released.set()
