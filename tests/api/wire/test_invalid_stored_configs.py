"""A stored block the validator now refuses runs under the defaults, and /metrics counts it."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.db import transaction

from api.store import services
from api.store.models import SETTINGS_PK, ConfigRevision, SchedulerSettings, Tenant
from api.wire.config_apply import ConfigApplier, load_update
from api.wire.loop_metrics import render
from api.wire.metrics import REGISTRY
from scheduler_core.model import QueueConfig, TenantLimits
from scheduler_core.runtime import SchedulerRuntime
from tests.polling import until

CLI = ConfigRevision.Source.CLI
# What older versions stored: a number past int64 and a regex RE2 refuses.
PAST_INT64 = {"max_queriers_per_tenant": 2, "max_outstanding_requests_per_tenant": 2**70}
LOOKAHEAD = {
    "query_priority": {
        "enabled": True,
        "priorities": [{"priority": 5, "query_attributes": [{"regex": "(?=up)x"}]}],
    }
}


def put(tenant_id: str, config: dict[str, Any]) -> Tenant:
    current = Tenant.objects.filter(tenant_id=tenant_id).values_list("version", flat=True).first()
    return services.tenant_put(
        tenant_id=tenant_id, config=config, expected_version=current, author=None, source=CLI
    )


@pytest.mark.django_db
def test_a_full_load_runs_failing_blocks_under_the_defaults_and_says_which() -> None:
    Tenant.objects.create(tenant_id="good", config={"max_queriers_per_tenant": 3})
    Tenant.objects.create(tenant_id="big", config=PAST_INT64)
    Tenant.objects.create(tenant_id="regex", config=LOOKAHEAD)
    SchedulerSettings.objects.update_or_create(
        pk=SETTINGS_PK, defaults={"config": {"querier_forget_delay": "-1s"}}
    )
    runtime = SchedulerRuntime(QueueConfig(layout="tenant-first"))
    applier = ConfigApplier(runtime)
    _, delta, full, invalid = load_update(-1)
    assert delta is None and full is not None
    applier.apply_full(full[1], full[2], invalid)
    assert runtime.config == QueueConfig()
    assert runtime.tenant_limits("good") == TenantLimits(max_queriers=3)
    assert runtime.tenant_limits("big") == TenantLimits()
    assert applier.invalid_tenants == {"big", "regex"} and applier.invalid_settings


async def metric() -> dict[str, float]:
    text = (await render(REGISTRY)).decode()
    name = "queue_inspector_invalid_stored_configs"
    return {
        line.split("{")[1].split("}")[0]: float(line.split()[-1])
        for line in text.splitlines()
        if line.startswith(name + "{")
    }


def put_as_an_older_replica(tenant_id: str, stored: dict[str, Any]) -> Tenant:
    """A committed change whose stored block this version's validator refuses."""
    with transaction.atomic():
        tenant = put(tenant_id, {"max_queriers_per_tenant": 1})
        Tenant.objects.filter(tenant_id=tenant_id).update(config=stored)
    return tenant


@pytest.mark.django_db(transaction=True)
async def test_a_failing_block_from_another_replica_is_counted_until_saved_fixed(
    host: Any,
) -> None:
    first = await database_sync_to_async(put)("old", {"max_queriers_per_tenant": 2})
    await until(lambda: host.applied_version == first.version)
    assert await metric() == {'kind="tenant"': 0.0, 'kind="settings"': 0.0}
    bad = await database_sync_to_async(put_as_an_older_replica)("old", LOOKAHEAD)
    await until(lambda: host.applied_version == bad.version)
    assert host.runtime.tenant_limits("old") == TenantLimits()
    assert await metric() == {'kind="tenant"': 1.0, 'kind="settings"': 0.0}
    fixed = await database_sync_to_async(put)("old", {"max_queriers_per_tenant": 4})
    await until(lambda: host.applied_version == fixed.version)
    assert host.runtime.tenant_limits("old") == TenantLimits(max_queriers=4)
    assert await metric() == {'kind="tenant"': 0.0, 'kind="settings"': 0.0}
