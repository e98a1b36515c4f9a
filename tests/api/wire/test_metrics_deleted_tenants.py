"""A configured tenant's rule counters leave /metrics once it is deleted and idle."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.test import AsyncClient

from api.store.services import tenant_delete, tenant_put
from api.wire import metrics
from scheduler_core.model import Request
from scheduler_core.rejection import judge
from scheduler_core.rules import QueryInfo
from tests.fakes import FakeClock

pytestmark = pytest.mark.django_db(transaction=True)

IDLE = 900.0
RULES = {"query_rejection": {"enabled": True, "query_attributes": [{"regex": "^up$"}]}}
RULE_FAMILIES = (
    "cortex_query_scheduler_priority_rule_matches_total",
    "cortex_query_frontend_rejected_queries_total",
)


@pytest.fixture
def clock(host: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeClock]:
    """The janitor on a fake clock, tracking no tenant of an earlier test."""
    janitor = metrics.JANITOR
    for tenant in [*janitor._outstanding, *janitor._idle_since]:
        for forget in janitor._forget:
            forget(tenant)
    clock = FakeClock(50_000.0)
    monkeypatch.setattr(janitor, "_outstanding", {})
    monkeypatch.setattr(janitor, "_idle_since", {})
    monkeypatch.setattr(janitor, "_clock", clock)
    monkeypatch.setattr(janitor, "_idle_seconds", IDLE)
    # No sweep time of an earlier test's clock; both put back together after.
    monkeypatch.setattr(janitor, "_last_sweep", None)
    monkeypatch.setattr(janitor, "_due", 0.0)
    monkeypatch.setattr(metrics, "_RULES_KEPT", set())
    # Counting this host's runtime already: a first scrape must not restart the counts.
    monkeypatch.setattr(metrics, "_counted_runtime", [host.runtime])
    yield clock


async def configure(host: Any, tenant_id: str) -> None:
    put = database_sync_to_async(tenant_put)
    await put(tenant_id=tenant_id, config=RULES, expected_version=None, author=None, source="api")
    await host.reconcile()
    assert host.tenant_configured(tenant_id)


async def delete(host: Any, tenant_id: str) -> None:
    remove = database_sync_to_async(tenant_delete)
    await remove(tenant_id=tenant_id, expected_version=None, author=None, source="api")
    await host.reconcile()
    assert not host.tenant_configured(tenant_id)


def admit(host: Any, tenant_id: str, query: str) -> bool:
    """Judge and record one query as a door does; whether its rule refused it."""
    limits = host.runtime.tenant_limits(tenant_id)
    info = QueryInfo(query=query, api_type="query", start=None, end=None, step=None)
    verdict = judge(limits, info, 0.0)
    host.admission_log.record(tenant_id, limits, verdict, info, "ingester", 0.0)
    return verdict.rejected


async def rule_tenants() -> set[str]:
    """The tenants with a rule counter series in a scrape."""
    response = await AsyncClient().get("/metrics")
    assert response.status_code == 200
    return {
        line.split('user="', 1)[1].split('"', 1)[0]
        for line in response.content.decode().splitlines()
        if line.startswith(RULE_FAMILIES) and 'user="' in line
    }


async def test_a_deleted_tenant_gone_idle_while_configured_loses_its_rule_series(
    host: Any, clock: FakeClock
) -> None:
    await configure(host, "del-idle")
    assert admit(host, "del-idle", "up")
    assert not admit(host, "del-idle", "rate(x[1m])")
    host.runtime.enqueue(Request(id="del-idle-1", tenant_id="del-idle"))
    host.runtime.cancel("del-idle-1")
    assert "del-idle" in await rule_tenants()
    clock.now += IDLE + 1
    # Idle, but configured: its rule counters stay (its other series go).
    assert "del-idle" in await rule_tenants()
    await delete(host, "del-idle")
    assert "del-idle" not in await rule_tenants()
    assert host.admission_log.stats.counts("del-idle") is None


async def test_a_tenant_busy_again_when_deleted_keeps_its_rule_series_until_it_goes_idle(
    host: Any, clock: FakeClock
) -> None:
    await configure(host, "del-busy")
    assert admit(host, "del-busy", "up")
    clock.now += IDLE + 1
    assert "del-busy" in await rule_tenants()  # idle and configured: kept
    # Back before its block goes: a request still queued when it is deleted.
    assert not admit(host, "del-busy", "sum(x)")
    host.runtime.enqueue(Request(id="del-busy-1", tenant_id="del-busy"))
    await delete(host, "del-busy")
    clock.now += 10 * IDLE
    assert "del-busy" in await rule_tenants()
    host.runtime.cancel("del-busy-1")
    clock.now += IDLE + 1
    assert "del-busy" not in await rule_tenants()


async def test_deleting_a_tenant_never_seen_on_this_replica_leaves_others_rule_series(
    host: Any, clock: FakeClock
) -> None:
    await configure(host, "del-kept")
    await configure(host, "del-unseen")
    assert admit(host, "del-kept", "up")
    clock.now += IDLE + 1
    assert "del-kept" in await rule_tenants()
    await delete(host, "del-unseen")
    assert "del-kept" in await rule_tenants()


async def test_with_no_idle_delay_a_refused_tenants_rule_series_still_go_with_its_block(
    host: Any, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With METRICS_TENANT_IDLE_SECONDS at 0 the janitor forgets the tenant
    # within the refusal's own report, so being seen must be noted before that.
    monkeypatch.setattr(metrics.JANITOR, "_idle_seconds", 0.0)
    await configure(host, "del-now")
    assert admit(host, "del-now", "up")
    assert "del-now" in await rule_tenants()  # configured: kept though idle at once
    await delete(host, "del-now")
    assert "del-now" not in await rule_tenants()
