"""`judge_enqueue`: what a websocket enqueue is judged by."""

from __future__ import annotations

from api.wire.consumers.frontend import judge_enqueue
from api.wire.protocol import Enqueue
from scheduler_core.classify import client_headers
from scheduler_core.model import (
    PriorityDef,
    QueryAttribute,
    QueryPriority,
    Request,
    TenantLimits,
)
from scheduler_core.runtime import SchedulerRuntime

NOW = 1_700_000_000.0


def _enqueue(component: str | None, tenant: str = "acme") -> Enqueue:
    return Enqueue(
        id=1,
        tenant=tenant,
        query="up",
        api_type="query",
        start=NOW,
        end=NOW,
        step=None,
        headers={"user-agent": "first", "User-Agent": "second", "X-PANEL-ID": "7"},
        component=component,
    )


def test_a_named_component_reads_the_client_headers_as_classification_does() -> None:
    runtime = SchedulerRuntime()
    _, _, bare, _ = judge_enqueue(runtime, _enqueue("ingester"), NOW)
    _, _, classified, _ = judge_enqueue(runtime, _enqueue(None), NOW)
    expected = client_headers(_enqueue(None).headers)
    assert expected == ("first", "", "7")
    for info in (bare, classified):
        assert (info.user_agent, info.dashboard_uid, info.panel_id) == expected


def test_a_federated_org_id_runs_under_its_tenants_combined_limits_as_on_grpc() -> None:
    runtime = SchedulerRuntime()
    rules = QueryPriority(True, 1, [PriorityDef(9, query_attributes=[QueryAttribute(regex="up")])])
    runtime.set_tenant_limits("a", TenantLimits(max_queriers=3))
    runtime.set_tenant_limits("b", TenantLimits(max_queriers=5, query_priority=rules))

    _, verdict, _, limits = judge_enqueue(runtime, _enqueue(None, "a|b"), NOW)

    assert (limits.max_queriers, verdict.priority) == (3, 9)
    # Once queued, kept under the whole ID, so the queue shards its requests by them.
    runtime.enqueue(Request(id="r1", tenant_id="a|b", component="ingester", priority=9))
    assert runtime.tenant_limits("a|b") == limits
