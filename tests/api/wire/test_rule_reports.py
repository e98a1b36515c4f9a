"""What the dry run reads of the live queue: the queriers its shards are drawn from."""

from __future__ import annotations

import pytest

from api.wire import rule_reports, runtime_host
from scheduler_core.dry_run import serving_of
from scheduler_core.model import PriorityDef, QueryAttribute, QueryPriority, TenantLimits
from scheduler_core.runtime import SchedulerRuntime
from tests.fakes import FakeClock

LIMITS = TenantLimits(
    max_queriers=3,
    query_priority=QueryPriority(
        enabled=True,
        priorities=(
            PriorityDef(
                priority=3, reserved_queriers=1, query_attributes=(QueryAttribute(regex="x"),)
            ),
        ),
    ),
)


def test_a_shutting_down_querier_still_in_the_shards_is_among_the_dry_run_s_queriers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime = SchedulerRuntime(clock=FakeClock(10.0))
    for querier in ("q-1", "q-2", "q-3", "q-4", "q-5"):
        runtime.queue.connect_querier(querier)
    runtime.set_tenant_limits("t", LIMITS)
    # Shutting down with a worker still connected: the queue keeps it in the shards.
    leaving = runtime.queue.serving("t").shard[0]
    runtime.notify_querier_shutdown(leaving)
    monkeypatch.setattr(runtime_host, "started", lambda: True)
    monkeypatch.setattr(runtime_host, "get_runtime", lambda: runtime)
    queriers = rule_reports.connected_queriers()
    assert leaving in queriers
    assert serving_of("t", LIMITS, queriers) == runtime.queue.serving("t")
