"""The runtime host applies a one-tenant change as one tenant's work, not a full reload."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.db import transaction

from api.store import selectors, services
from api.store.models import ConfigRevision, RevisionTenant, Tenant
from scheduler_core.model import TenantLimits
from tests.polling import until

pytestmark = pytest.mark.django_db(transaction=True)
CLI = ConfigRevision.Source.CLI


def put(tenant_id: str, config: dict[str, Any]) -> Tenant:
    current = Tenant.objects.filter(tenant_id=tenant_id).values_list("version", flat=True).first()
    return services.tenant_put(
        tenant_id=tenant_id, config=config, expected_version=current, author=None, source=CLI
    )


@pytest.fixture
def full_reloads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts full reads of every tenant's limits (not those of named tenants)."""
    calls: list[int] = []
    real = selectors.tenant_limits_stored

    def counting(tenant_ids: list[str] | None = None) -> Any:
        if tenant_ids is None:
            calls.append(1)
        return real(tenant_ids)

    monkeypatch.setattr(selectors, "tenant_limits_stored", counting)
    return calls


async def test_a_tenant_write_is_applied_without_reading_every_tenant(
    host: Any, full_reloads: list[int]
) -> None:
    for n in range(20):
        await database_sync_to_async(put)(f"t{n}", {"max_queriers_per_tenant": 1})
    await until(lambda: host.applied_version == 20)
    full_reloads.clear()
    await database_sync_to_async(put)("t3", {"max_queriers_per_tenant": 6})
    await until(lambda: host.applied_version == 21)
    assert host.runtime.tenant_limits("t3") == TenantLimits(max_queriers=6)
    assert host.runtime.tenant_limits("t4") == TenantLimits(max_queriers=1)
    assert full_reloads == []


async def test_a_deleted_tenant_falls_back_to_the_defaults_by_delta(
    host: Any, full_reloads: list[int]
) -> None:
    tenant = await database_sync_to_async(put)("t", {"max_outstanding_requests_per_tenant": 3})
    await until(lambda: host.runtime.tenant_limits("t").max_outstanding == 3)
    await database_sync_to_async(services.tenant_delete)(
        tenant_id="t", expected_version=tenant.version, author=None, source=CLI
    )
    await until(lambda: host.applied_version == tenant.version + 1)
    assert host.runtime.tenant_limits("t") == TenantLimits()
    assert full_reloads == []


async def test_changes_missed_while_deaf_are_all_applied_by_the_next_reconcile(
    host: Any, full_reloads: list[int]
) -> None:
    from api.store import config_events

    # Nobody tells the host: the next reconcile must find every change.
    config_events.unsubscribe(host._on_local_change)
    try:
        await database_sync_to_async(put)("a", {"max_queriers_per_tenant": 2})
        await database_sync_to_async(put)("b", {"max_queriers_per_tenant": 3})
        await database_sync_to_async(put)("a", {"max_queriers_per_tenant": 4})
    finally:
        config_events.subscribe(host._on_local_change)
    await host.reconcile()
    assert host.applied_version == 3
    assert host.runtime.tenant_limits("a").max_queriers == 4
    assert host.runtime.tenant_limits("b").max_queriers == 3
    assert full_reloads == []


async def test_an_import_or_a_gap_falls_back_to_a_full_reload_that_is_still_exact(
    host: Any, full_reloads: list[int]
) -> None:
    from api.store import config_events

    config_events.unsubscribe(host._on_local_change)
    try:
        await database_sync_to_async(put)("a", {"max_queriers_per_tenant": 2})
        await database_sync_to_async(put)("b", {"max_queriers_per_tenant": 3})
        # A lost revision row: the delta cannot be trusted.
        await database_sync_to_async(ConfigRevision.objects.filter(version=1).delete)()
    finally:
        config_events.subscribe(host._on_local_change)
    await host.reconcile()
    assert full_reloads == [1]
    assert host.runtime.tenant_limits("a").max_queriers == 2
    assert host.runtime.tenant_limits("b").max_queriers == 3

    await database_sync_to_async(services.runtime_config_import)(
        overrides={"c": {"max_queriers_per_tenant": 5}}, author=None
    )
    await until(lambda: host.applied_version == 3)
    assert full_reloads == [1, 1]
    assert host.runtime.tenant_limits("a") == TenantLimits()
    assert host.runtime.tenant_limits("c").max_queriers == 5


def put_as_an_older_replica(tenant_id: str, config: dict[str, Any]) -> None:
    """A write as a replica of a version before RevisionTenant makes it: no tenant record."""
    with transaction.atomic():
        put(tenant_id, config)
        RevisionTenant.objects.filter(revision__key=tenant_id).delete()


async def test_a_revision_an_older_replica_wrote_gets_its_tenants_recorded_as_it_is_applied(
    host: Any,
) -> None:
    await database_sync_to_async(put_as_an_older_replica)("old-writer", {})
    await until(lambda: host.applied_version == 1)

    def found() -> list[int]:
        return [r.version for r in selectors.revision_list(changed="old-writer")]

    for _ in range(500):
        if await database_sync_to_async(found)():
            break
        await asyncio.sleep(0.01)
    assert await database_sync_to_async(found)() == [1]
