"""The queriers panel over real queue snapshots, on a fake clock."""

from __future__ import annotations

import pytest

import dashboard.querier_view as querier_view
from dashboard.projections import SnapshotIndex, build_header
from dashboard.querier_view import RESERVED_IDLE_AFTER, build_queriers
from scheduler_core.model import (
    STORE_GATEWAY,
    PriorityDef,
    QueryAttribute,
    QueryPriority,
    Request,
    TenantLimits,
)
from scheduler_core.queue import RequestQueue
from tests.fakes import FakeClock, clocked_queue

# Priority 5 of the tenant is kept one querier, its first in ID order.
RESERVED = QueryPriority(True, 0, [PriorityDef(5, 1, [QueryAttribute(regex="x")])])


def queue_with(*queriers: str, workers: int = 4) -> tuple[RequestQueue, FakeClock]:
    queue, clock = clocked_queue(1000.0, max_outstanding_requests_per_tenant=10_000)
    for querier in queriers:
        for _ in range(workers):
            queue.connect_querier(querier)
    return queue, clock


def states(queue: RequestQueue) -> list[tuple[str, str]]:
    return [(q["id"], q["state"]) for q in build_queriers(queue.snapshot())["queriers"]]


def test_a_reserved_querier_idle_for_a_second_is_flagged_with_its_reservation() -> None:
    queue, clock = queue_with("q-1", "q-2")
    queue.set_tenant_limits("gold", TenantLimits(query_priority=RESERVED))
    clock.now += RESERVED_IDLE_AFTER
    panel = build_queriers(queue.snapshot())
    first = panel["queriers"][0]
    assert first["state"] == "reserved-idle" and first["reserved_idle"]
    assert first["reservations"] == [{"tenant": "gold", "priority": 5}]
    assert panel["reserved_idle"] == [first["id"]]
    assert {w["state"] for w in first["workers"]} == {"idle"}


def test_a_reserved_querier_between_two_requests_is_not_flagged_idle() -> None:
    # Each tick may fall in the moment between two of its requests, when no
    # worker is busy; flagging that made the header figure flicker.
    queue, clock = queue_with("q-1", "q-2", workers=1)
    queue.set_tenant_limits("gold", TenantLimits(query_priority=RESERVED))
    queue.enqueue(Request(id="r1", tenant_id="gold", query="x", priority=5))
    request, _ = queue.dequeue("q-1", 0)
    assert request is not None
    clock.now += 5
    queue.complete("r1")
    clock.now += 0.25
    assert queue.snapshot().queriers[0].reserved_idle  # no worker busy at this instant
    assert states(queue) == [("q-1", "idle"), ("q-2", "idle")]
    assert build_header(SnapshotIndex.build(queue.snapshot()), None)["reserved_idle"] == 0
    clock.now += RESERVED_IDLE_AFTER
    assert states(queue) == [("q-1", "reserved-idle"), ("q-2", "idle")]
    assert build_header(SnapshotIndex.build(queue.snapshot()), None)["reserved_idle"] == 1


def vip_reserves_q3() -> tuple[RequestQueue, FakeClock]:
    """Queriers q-1 to q-4, one worker each, q-3 reserved (and idle) for vip."""
    queue, clock = queue_with("q-4", "q-3", "q-2", "q-1", workers=1)
    # vip's shard of two is q-3 and q-4: the reservation takes q-3, so the
    # reserved and idle card is neither first nor last by ID.
    queue.set_tenant_limits("vip", TenantLimits(max_queriers=2, query_priority=RESERVED))
    clock.now += RESERVED_IDLE_AFTER
    assert build_queriers(queue.snapshot())["reserved_idle"] == ["q-3"]
    return queue, clock


def test_cards_stay_in_id_order_whatever_each_querier_is_doing() -> None:
    queue, _ = vip_reserves_q3()
    queue.enqueue(Request(id="r1", tenant_id="acme", component=STORE_GATEWAY))
    request, _ = queue.dequeue("q-2", 0)
    assert request is not None
    assert states(queue) == [
        ("q-1", "idle"),
        ("q-2", "busy"),
        ("q-3", "reserved-idle"),
        ("q-4", "idle"),
    ]


def test_past_the_cap_the_reserved_and_idle_queriers_are_kept_and_still_in_id_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    queue, _ = vip_reserves_q3()
    monkeypatch.setattr(querier_view, "MAX_QUERIERS_SHOWN", 2)
    panel = build_queriers(queue.snapshot())
    assert [q["id"] for q in panel["queriers"]] == ["q-1", "q-3"]
    assert panel["hidden"] == 2 and panel["total"] == 4


def test_busy_worker_shows_tenant_component_priority_and_how_long() -> None:
    queue, clock = queue_with("q-1", workers=1)
    queue.enqueue(Request(id="r1", tenant_id="acme", component=STORE_GATEWAY, priority=2))
    request, _ = queue.dequeue("q-1", 0)
    assert request is not None
    clock.now += 3
    busy = build_queriers(queue.snapshot())["queriers"][0]["workers"][0]
    assert busy == {
        "id": 0,
        "state": "busy",
        "tenant": "acme",
        "component": STORE_GATEWAY,
        "priority": 2,
        "request": "r1",
        "for": 3.0,
    }


def test_shard_membership_counts_sharded_and_unsharded_tenants() -> None:
    queue, _ = queue_with("q-1", "q-2", "q-3", workers=1)
    queue.set_tenant_limits("small", TenantLimits(max_queriers=1))
    queue.set_tenant_limits("all", TenantLimits())
    panel = build_queriers(queue.snapshot())["queriers"]
    assert sum(q["shard_tenants"] for q in panel) == 1
    assert {q["unsharded_tenants"] for q in panel} == {1}


def test_shutting_down_querier_is_marked() -> None:
    queue, _ = queue_with("q-1", workers=1)
    queue.notify_querier_shutdown("q-1")
    assert states(queue) == [("q-1", "shutting-down")]
