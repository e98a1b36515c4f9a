"""Per-tenant /metrics series go once a tenant has been idle for the delay."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import AsyncClient

from api.wire import metrics
from api.wire.tenant_series import TenantSeriesJanitor
from scheduler_core.errors import TooManyRequests
from scheduler_core.federation import org_limits
from scheduler_core.model import QueryAttribute, QueryRejection, Request, TenantLimits
from scheduler_core.rejection import judge
from scheduler_core.rules import QueryInfo
from tests.fakes import FakeClock


def janitor(clock: FakeClock, idle: float = 900.0) -> tuple[TenantSeriesJanitor, list[str]]:
    gone: list[str] = []
    j = TenantSeriesJanitor(clock, idle)
    j.on_forget(gone.append)
    return j, gone


def test_a_tenant_with_work_outstanding_is_never_forgotten() -> None:
    clock = FakeClock(0.0)
    j, gone = janitor(clock)
    j.started("busy")
    clock.now += 10_000
    assert j.sweep() == [] and gone == []
    j.ended("busy")
    clock.now += 899
    assert j.sweep() == []
    clock.now += 1
    assert j.sweep() == ["busy"] and gone == ["busy"]
    assert j.tracked() == 0


def test_every_request_must_end_before_the_idle_time_starts() -> None:
    clock = FakeClock(0.0)
    j, _ = janitor(clock)
    j.started("t")
    j.started("t")
    j.ended("t")
    clock.now += 1000
    assert j.sweep() == []
    j.ended("t")
    clock.now += 900
    assert j.sweep() == ["t"]


def test_a_tenant_only_refused_is_forgotten_after_the_delay_and_a_return_restarts_it() -> None:
    clock = FakeClock(0.0)
    j, _ = janitor(clock)
    j.seen("refused")
    clock.now += 600
    j.seen("refused")  # back before the delay: idle from now
    clock.now += 600
    assert j.sweep() == []
    clock.now += 300
    assert j.sweep() == ["refused"]


def test_a_new_runtime_makes_the_old_ones_tenants_idle_from_then() -> None:
    clock = FakeClock(0.0)
    j, _ = janitor(clock)
    j.started("left-running")
    clock.now += 50
    j.restart()
    clock.now += 899
    assert j.sweep() == []
    clock.now += 1
    assert j.sweep() == ["left-running"]


def test_sweeps_from_events_run_at_most_once_an_interval() -> None:
    clock = FakeClock(0.0)
    j, gone = janitor(clock, idle=100.0)
    assert j.sweep_interval == 20.0
    j.seen("a")
    clock.now += 100
    j.sweep()
    j.seen("b")
    clock.now += 105
    assert j.maybe_sweep() == ["b"]
    j.seen("c")
    clock.now += 100
    assert j.maybe_sweep() == ["c"]  # 100 s later: due
    j.seen("d")
    clock.now += 10
    assert j.maybe_sweep() == []  # 10 s after the last sweep: not due yet
    assert gone == ["a", "b", "c"]


pytestmark_db = pytest.mark.django_db(transaction=True)


COUNTERS = (
    "cortex_request_queue_requests_total",
    "cortex_query_scheduler_discarded_requests_total",
    "cortex_query_scheduler_cancelled_requests_total",
    "queue_inspector_failed_requests_total",
    "queue_inspector_completed_requests_total",
)


def counter_tenants(text: str) -> set[str]:
    """The tenants with a per-tenant counter series in a scrape."""
    found = set()
    for line in text.splitlines():
        if line.startswith(COUNTERS) and 'user="' in line:
            found.add(line.split('user="', 1)[1].split('"', 1)[0])
    return found


async def scrape() -> str:
    response = await AsyncClient().get("/metrics")
    assert response.status_code == 200
    return response.content.decode()


@pytestmark_db
async def test_idle_unknown_tenants_leave_metrics_and_busy_ones_stay(
    host: Any, monkeypatch: pytest.MonkeyPatch, janitor_clock: FakeClock
) -> None:
    # Earlier tests in this process leave series behind (stamped on the real
    # clock, or with requests their runtime never ended): start from none.
    janitor_state = metrics.JANITOR
    for tenant in [*janitor_state._outstanding, *janitor_state._idle_since]:
        for forget in janitor_state._forget:
            forget(tenant)
    monkeypatch.setattr(janitor_state, "_outstanding", {})
    monkeypatch.setattr(janitor_state, "_idle_since", {})
    clock = janitor_clock
    runtime = host.runtime
    for n in range(50):
        runtime.enqueue(Request(id=f"gone-{n}", tenant_id=f"made-up-{n}"))
        runtime.cancel(f"gone-{n}")
    runtime.enqueue(Request(id="failed-back", tenant_id="failed-once"))
    runtime.fail("failed-back", "cancelled by an operator")
    runtime.set_tenant_limits("full", TenantLimits(max_outstanding=1))
    runtime.enqueue(Request(id="stays", tenant_id="full"))
    with pytest.raises(TooManyRequests):
        runtime.enqueue(Request(id="refused", tenant_id="full"))
    text = await scrape()
    assert text.count('cortex_request_queue_requests_total{priority="0",user="made-up-') == 50
    assert text.count('cortex_query_scheduler_cancelled_requests_total{user="made-up-') == 50
    failed = 'queue_inspector_failed_requests_total{reason="operator_cancelled",user="failed-once"}'
    assert failed in text
    assert 'cortex_query_scheduler_discarded_requests_total{priority="0",user="full"}' in text

    clock.now += 901
    text = await scrape()
    assert counter_tenants(text) == {"full"}
    assert 'user="made-up-' not in await scrape()  # the peak gauge reports a 0 once
    # "full" still has a request queued: its series stay, however long.
    assert 'cortex_request_queue_requests_total{priority="0",user="full"} 1.0' in text
    clock.now += 10_000
    assert 'user="full"' in await scrape()

    runtime.cancel("stays")
    clock.now += 901
    assert counter_tenants(await scrape()) == set()
    # A tenant that comes back counts from zero again.
    runtime.enqueue(Request(id="back", tenant_id="made-up-1"))
    assert 'cortex_request_queue_requests_total{priority="0",user="made-up-1"} 1.0' in (
        await scrape()
    )
    runtime.cancel("back")


@pytestmark_db
async def test_a_federated_id_refused_by_an_inherited_rule_leaves_its_rule_series_after_the_delay(
    host: Any, monkeypatch: pytest.MonkeyPatch, janitor_clock: FakeClock
) -> None:
    """Refused at admission, it never reaches the runtime; the admission log says it was active."""
    monkeypatch.setattr(metrics.JANITOR, "_outstanding", {})
    monkeypatch.setattr(metrics.JANITOR, "_idle_since", {})
    clock = janitor_clock
    rules = QueryRejection(True, [QueryAttribute(regex="up")])
    host.runtime.set_tenant_limits("a", TenantLimits(query_rejection=rules))
    limits = org_limits(host.runtime, "a|x")
    info = QueryInfo(query="up", api_type="query", start=None, end=None, step=None)
    verdict = judge(limits, info, 0.0)
    assert verdict.rejected_by == 0
    host.admission_log.record("a|x", limits, verdict, info, "ingester", 0.0)
    rejected = (
        'cortex_query_frontend_rejected_queries_total{reason="query_rejection",user="a|x"} 1.0'
    )
    assert rejected in await scrape()

    clock.now += 901
    assert 'user="a|x"' not in await scrape()
