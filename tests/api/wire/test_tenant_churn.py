"""A scheduler that sees thousands of short-lived tenants keeps nothing of them once idle.

Runs for months see CI tenants, per-PR tenants and federated IDs made up on
the fly come and go. Each churn round here drives distinct tenant IDs (and
`a|b` federated ones) through admission and the runtime, then lets the
fake clocks pass every idle delay, and checks each per-tenant structure the
host and the metrics keep is back to what it held before: no Prometheus
scrape in between, since nothing says an operator scrapes at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from api.wire import metrics, traffic_recording
from scheduler_core.federation import org_limits
from scheduler_core.model import Request
from scheduler_core.rejection import judge
from scheduler_core.rules import QueryInfo
from scheduler_core.traffic_record import TrafficRecorder
from tests.fakes import FakeClock

# Each test on an emptied what-if recorder (`fresh_recorder`): churn fills its key table.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_recorder")]

IDLE = 900.0


async def churn(host: Any, round_no: int, tenants: int) -> None:
    """Each tenant: two requests admitted, one run to completion, one cancelled."""
    runtime = host.runtime
    querier = f"churn-querier-{round_no}"
    worker = runtime.connect_querier(querier)
    info = QueryInfo(query="up", api_type="query", start=None, end=None, step=None)
    for n in range(tenants):
        # Every fifth one federated, as a Cortex frontend sends `a|b`.
        tenant = f"r{round_no}-t{n}" if n % 5 else f"r{round_no}-t{n}|r{round_no}-x{n}"
        limits = org_limits(runtime.queue, tenant)
        host.admission_log.record(tenant, limits, judge(limits, info, 0.0), info, "ingester", 0.0)
        for kind in ("done", "gone"):
            runtime.enqueue(Request(id=f"{kind}-{round_no}-{n}", tenant_id=tenant))
        taken = await runtime.next_request(querier, worker)
        runtime.complete(taken.id)
        runtime.cancel(f"gone-{round_no}-{n}")
    runtime.disconnect_querier_worker(querier, worker)


def sizes(host: Any) -> dict[str, int]:
    """How many tenants each per-tenant structure holds now."""
    queue, assignment = host.runtime.queue, host.runtime.queue._assignment
    return {
        "queue tenants": len(queue._tenants),
        "queue limits": len(queue._limits),
        "shards": len(assignment.shards),
        "reservations": len(assignment.reserved_by_tenant),
        "rule stats": len(host.admission_log.stats.tenants()),
        "janitor": metrics.JANITOR.tracked(),
        "metric priorities": len(metrics._PRIORITIES),
        "queue peaks": metrics.PEAKS.tracked(),
        "queue length series": metrics.LENGTHS.tracked(),
        "querier time": len(host.usage.report(limit=0).rows) + host.usage.report().tenant_count,
    }


def forget_tracked() -> None:
    """Remove the series of every tenant the janitor knows."""
    for tenant in [*metrics.JANITOR._outstanding, *metrics.JANITOR._idle_since]:
        for forget in metrics.JANITOR._forget:
            forget(tenant)


@pytest.fixture
def clock(host: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeClock]:
    """One fake clock for the janitor and querier-time buckets; no tenant tracked before."""
    clock = FakeClock(10_000.0)
    forget_tracked()
    monkeypatch.setattr(metrics.JANITOR, "_outstanding", {})
    monkeypatch.setattr(metrics.JANITOR, "_idle_since", {})
    monkeypatch.setattr(metrics.JANITOR, "_clock", clock)
    monkeypatch.setattr(metrics.JANITOR, "_idle_seconds", IDLE)
    monkeypatch.setattr(metrics, "PEAKS", metrics.QueuePeaks())
    monkeypatch.setattr(host.usage, "_clock", clock)
    yield clock
    # Their series would outlive the patched janitor that knew them.
    forget_tracked()


async def test_tenants_that_went_idle_leave_no_per_tenant_state_behind_without_a_scrape(
    host: Any, clock: FakeClock
) -> None:
    before = sizes(host)
    for round_no in range(2):
        await churn(host, round_no, 500)
        during = sizes(host)
        assert during["janitor"] >= 500 and during["queue peaks"] >= 500
        clock.now += IDLE + 1
        # The next request of anyone sweeps; no scrape of /metrics comes.
        host.runtime.enqueue(Request(id=f"wake-{round_no}", tenant_id="steady"))
        host.runtime.cancel(f"wake-{round_no}")
        after = sizes(host)
        steady = {"janitor": 1, "metric priorities": 1, "queue peaks": 1, "rule stats": 0}
        assert after == {key: before[key] + steady.get(key, 0) for key in before}, round_no


@pytest.fixture
def fresh_recorder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The process's what-if recorder emptied for one test, its old tables back after.

    Its key table fills up under churn and makes room only for keys idle an
    hour, so a later test recording a tenant of its own would find no room.
    """
    live = traffic_recording.recorder()
    empty = TrafficRecorder(actor_path_header=live._samples._actor_header)
    for part in ("_samples", "_keys", "_minutes", "_started"):
        monkeypatch.setattr(live, part, getattr(empty, part))


async def test_the_recorders_bounded_tables_stay_bounded_under_churn(
    host: Any, clock: FakeClock
) -> None:
    """Sample and what-if recorder hold by cap, not by tenant: churn cannot grow them."""
    await churn(host, 0, 3000)
    traffic = host.admission_log.traffic
    assert traffic.bytes <= traffic.max_bytes
    keys = traffic_recording.recorder()._keys
    assert len(keys._keys) <= keys.max_keys
