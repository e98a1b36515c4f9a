"""ENQUEUE messages become queue requests with our component and priority."""

from __future__ import annotations

from typing import Any

import pytest

from api.wire.grpc.admission import (
    FEDERATION_REFUSED_STATUS,
    Admission,
    InvalidEnqueue,
    QueryRejected,
)
from api.wire.grpc.clients import get_request
from scheduler_core.federation import MAX_ORG_ID_LENGTH, combined_limits
from scheduler_core.model import (
    INGESTER,
    STORE_GATEWAY,
    UNKNOWN,
    PriorityDef,
    QueryAttribute,
    QueryPriority,
    QueueConfig,
    TenantLimits,
)
from scheduler_core.pb import schedulerpb_pb2 as pb

NOW = 1_700_000_000.0
PRIORITY_7 = QueryPriority(
    enabled=True, priorities=[PriorityDef(7, query_attributes=[QueryAttribute(regex="x")])]
)


class Host:
    """The runtime's limits surface, in memory."""

    def __init__(self, limits: dict[str, TenantLimits]) -> None:
        self.limits = dict(limits)
        self.config = QueueConfig()

    def tenant_limits(self, tenant_id: str) -> TenantLimits:
        return self.limits.get(tenant_id, TenantLimits())


def enqueue(user_id: str, query: str = "x", **extra: Any) -> pb.FrontendToScheduler:
    params = [("query", query), ("start", str(NOW - 600)), ("end", str(NOW)), ("step", "15")]
    return pb.FrontendToScheduler(
        type=pb.ENQUEUE,
        queryID=5,
        userID=user_id,
        httpRequest=get_request("/api/v1/query_range", params, {"User-Agent": "grafana"}),
        **extra,
    )


def test_the_smallest_positive_shard_and_limit_win_for_several_tenants() -> None:
    parts = [
        TenantLimits(max_queriers=0, max_outstanding=None),
        TenantLimits(max_queriers=4, max_outstanding=50, query_priority=PRIORITY_7),
        TenantLimits(max_queriers=2, max_outstanding=None),
    ]

    combined = combined_limits(parts)

    assert combined == TenantLimits(max_queriers=2, max_outstanding=50, query_priority=PRIORITY_7)


def test_no_tenant_limits_means_no_limits_for_the_combination() -> None:
    assert combined_limits([TenantLimits(), TenantLimits()]) == TenantLimits()


def test_a_multi_tenant_id_is_built_whole_under_its_tenants_combined_limits() -> None:
    host = Host({"a": TenantLimits(max_queriers=3), "b": TenantLimits(query_priority=PRIORITY_7)})
    admission = Admission(host, wall_clock=lambda: NOW)

    request = admission.build(enqueue("a|b"), "fe:1")

    assert (request.tenant_id, request.priority) == ("a|b", 7)
    # Admission only reads; the queue keeps `a|b`'s limits while it has work.
    assert set(host.limits) == {"a", "b"}


def test_a_federated_id_is_queued_normalised_as_cortex_reads_it() -> None:
    admission = Admission(Host({}), wall_clock=lambda: NOW)
    assert admission.build(enqueue("b|a|b"), "fe:1").tenant_id == "a|b"


def test_request_fields_come_from_the_forwarded_http_request() -> None:
    admission = Admission(
        Host({"t": TenantLimits(query_priority=PRIORITY_7)}), wall_clock=lambda: NOW
    )

    request = admission.build(enqueue("t", "rate(x[5m])"), "fe:1")

    assert request.id == "grpc:fe:1:5"
    assert (request.component, request.priority, request.api_type) == (INGESTER, 7, "query_range")
    assert (request.start, request.end, request.step) == (NOW - 600, NOW, 15.0)
    assert request.headers == {"User-Agent": "grafana"}
    assert (request.payload.frontend_address, request.payload.user_id) == ("fe:1", "t")


def test_a_mimir_component_hint_replaces_our_classification() -> None:
    admission = Admission(Host({}), wall_clock=lambda: NOW)

    hinted = admission.build(enqueue("t", additionalQueueDimensions=[STORE_GATEWAY]), "fe:1")

    assert hinted.component == STORE_GATEWAY


def test_a_failing_classifier_costs_the_component_not_the_request() -> None:
    def broken(**_: Any) -> Any:
        raise ValueError("parser bug")

    admission = Admission(
        Host({"t": TenantLimits(query_priority=PRIORITY_7)}),
        wall_clock=lambda: NOW,
        classifier=broken,
    )

    request = admission.build(enqueue("t"), "fe:1")

    assert (request.component, request.priority) == (UNKNOWN, 7)


@pytest.mark.parametrize(
    ("user_id", "reason"),
    [
        ("", "no org id"),
        ("a||b", "tenant ID is empty"),
        ("x" * 151, "too long"),
        # Cortex's words, naming the first character it refuses.
        ("a|b c\x00", "^tenant ID 'b c.x00' contains unsupported character ' '$"),
        ("équipe", "contains unsupported character 'é'"),
    ],
)
def test_unusable_tenant_ids_are_refused(user_id: str, reason: str) -> None:
    with pytest.raises(InvalidEnqueue, match=reason):
        Admission(Host({}), wall_clock=lambda: NOW).build(enqueue(user_id), "fe:1")


def test_a_federated_id_over_max_federated_tenants_is_a_400_naming_both_counts() -> None:
    # Answered through QueryResult, not an ERROR reply: a Cortex frontend's
    # own checks pass such an ID, and ERROR crashed frontends before v1.20.
    host = Host({})
    host.config = QueueConfig(max_federated_tenants=2)
    admission = Admission(host, wall_clock=lambda: NOW)
    assert admission.build(enqueue("a|b"), "fe:1").tenant_id == "a|b"
    assert admission.build(enqueue("b|a|b"), "fe:1").tenant_id == "a|b"  # counted once each
    with pytest.raises(QueryRejected, match="names 3 tenants; at most 2 may be federated") as no:
        admission.build(enqueue("c|a|b"), "fe:1")
    assert no.value.status == FEDERATION_REFUSED_STATUS == 400
    assert (no.value.handle.user_id, no.value.handle.frontend_address) == ("c|a|b", "fe:1")


def test_a_user_id_longer_than_a_cortex_frontend_can_send_is_refused_before_its_tenants() -> None:
    host = Host({})
    host.config = QueueConfig(max_federated_tenants=2)  # would count its tenants, were it read
    user_id = "a|" * (MAX_ORG_ID_LENGTH // 2) + "b"

    with pytest.raises(InvalidEnqueue) as refused:
        Admission(host, wall_clock=lambda: NOW).build(enqueue(user_id), "fe:1")

    assert str(refused.value) == (
        f"userID is {len(user_id)} characters long; at most {MAX_ORG_ID_LENGTH} may be "
        "sent, the longest X-Scope-OrgID a Cortex query-frontend can forward"
    )


async def test_the_server_starts_on_a_runtime_without_observer_and_keeps_every_observer() -> None:
    from api.wire.grpc.server import start_grpc_server
    from api.wire.observers import FanOutObserver
    from scheduler_core.runtime import SchedulerRuntime

    runtime = SchedulerRuntime()
    door = await start_grpc_server(runtime, port=0, host="127.0.0.1")
    try:
        assert isinstance(runtime.observer, FanOutObserver)
        assert runtime.observer.observers == (door.frontends, door.reporter, door.foreign)
    finally:
        await door.stop(0)


def test_the_actor_path_comes_from_the_configured_header_whatever_its_case() -> None:
    host = Host({})
    admission = Admission(host, wall_clock=lambda: NOW)
    message = enqueue("t")
    message.httpRequest.headers.add(key="x-loki-actor-path", values=["apps|grafana"])

    assert admission.build(message, "fe:1").actor_path == ("apps", "grafana")
    host.config = QueueConfig(actor_path_header="X-Team")
    assert admission.build(message, "fe:2").actor_path == ()
    message.httpRequest.headers.add(key="X-TEAM", values=[])
    message.httpRequest.headers.add(key="x-team", values=["search|alice"])
    assert admission.build(message, "fe:3").actor_path == ("search", "alice")
