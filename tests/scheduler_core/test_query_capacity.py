"""Loki's `max_query_capacity`: the tenant's shard as a share of the queriers."""

from __future__ import annotations

import pytest

from scheduler_core.model import QueryPriority, Request, TenantLimits
from scheduler_core.queue import RequestQueue
from scheduler_core.tenant_querier_assignment import (
    TenantQuerierAssignment,
    effective_shard_size,
    querier_share,
    shuffle_shard,
)
from scheduler_core.validation import (
    tenant_limits_from_dict,
    tenant_limits_to_dict,
    validate_tenant_config,
)


@pytest.mark.parametrize(
    ("max_queriers", "capacity", "queriers", "size"),
    [
        (0, 0.0, 10, 0),  # neither: every querier
        (4, 0.0, 10, 4),  # max_queriers alone
        (0, 0.25, 10, 3),  # capacity alone: ceil(2.5)
        (2, 0.25, 10, 2),  # both: the smaller
        (5, 0.25, 10, 3),
        (0, 0.3, 10, 3),
        (0, 0.07, 100, 7),  # 0.07 * 100 is 7.000000000000001: still 7 (Loki's 8)
        (0, 0.29, 100, 29),  # 28.999999999999996: still 29
        (0, 0.01, 10, 1),  # a sliver is still one querier
        (0, 1.0, 10, 0),  # the whole fleet is no cap
        (4, 1.0, 10, 4),
        (0, 0.5, 0, 0),  # no querier yet
    ],
)
def test_the_shard_size_follows_lokis_rule(
    max_queriers: int, capacity: float, queriers: int, size: int
) -> None:
    assert effective_shard_size(max_queriers, capacity, queriers) == size


def test_explain_says_how_many_queriers_the_tenant_may_use_and_why() -> None:
    share = querier_share(0, 0.25, 10)
    assert share.summary() == "this tenant may use 3 of 10 queriers (max_query_capacity)"
    assert querier_share(2, 0.25, 10).decided_by == "max_queriers_per_tenant"
    assert querier_share(0, 0.0, 10).summary() == "this tenant may use 10 of 10 queriers"


def test_the_capacity_shard_grows_and_shrinks_as_queriers_come_and_go() -> None:
    changes: list[tuple[str, object, object]] = []
    assignment = TenantQuerierAssignment(lambda t, old, new: changes.append((t, old, new)))
    assignment.set_tenant("t", 0, QueryPriority(), max_query_capacity=0.25)
    workers = [assignment.connect(f"q{i:02d}", 0.0) for i in range(8)]
    names = [f"q{i:02d}" for i in range(8)]
    assert assignment.shard_of("t") == shuffle_shard("t", names, 2)
    for i in range(8, 12):
        assignment.connect(f"q{i:02d}", 0.0)
    names = [f"q{i:02d}" for i in range(12)]
    assert assignment.shard_of("t") == shuffle_shard("t", names, 3)
    for worker in workers[:6]:
        assignment.disconnect(worker, 1.0, 0.0)
    assert assignment.shard_of("t") == shuffle_shard("t", names[6:], 2)
    assert changes and all(t == "t" for t, _, _ in changes)


def test_every_replica_computes_the_same_capacity_shard() -> None:
    def shard(order: list[str]) -> object:
        assignment = TenantQuerierAssignment(lambda *_: None)
        for querier in order:
            assignment.connect(querier, 0.0)
        assignment.set_tenant("team-a", 3, QueryPriority(), max_query_capacity=0.4)
        return assignment.shard_of("team-a")

    names = [f"querier-{i}" for i in range(10)]
    assert shard(names) == shard(list(reversed(names))) == shuffle_shard("team-a", names, 3)


def test_only_queriers_in_the_capacity_shard_serve_the_tenant() -> None:
    queue = RequestQueue()
    for i in range(4):
        queue.connect_querier(f"q{i}")
    queue.set_tenant_limits("t", TenantLimits(max_query_capacity=0.5))
    shard = queue.snapshot().tenants[0].shard
    assert shard is not None and len(shard) == 2
    outside = next(f"q{i}" for i in range(4) if f"q{i}" not in shard)
    queue.enqueue(Request(id="r1", tenant_id="t"))
    assert queue.dequeue(outside, 0)[0] is None
    assert queue.dequeue(shard[0], 0)[0] is not None


def test_max_query_capacity_is_validated_as_a_share_with_its_field_path() -> None:
    for bad, message in ((1.5, "at most 1"), (-0.1, "negative"), ("half", "number")):
        errors = validate_tenant_config({"max_query_capacity": bad})
        assert [e.path for e in errors] == ["max_query_capacity"]
        assert message in errors[0].message
    assert validate_tenant_config({"max_query_capacity": 0}) == []


def test_max_query_capacity_round_trips_under_lokis_name() -> None:
    limits = tenant_limits_from_dict({"max_query_capacity": 0.25, "max_queriers_per_tenant": 4})
    assert limits.max_query_capacity == 0.25
    assert tenant_limits_to_dict(limits)["max_query_capacity"] == 0.25
    assert "max_query_capacity" not in tenant_limits_to_dict(TenantLimits())
