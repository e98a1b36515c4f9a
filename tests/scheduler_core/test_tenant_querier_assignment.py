"""Shuffle shards, reservations and querier bookkeeping, independent of the queue."""

from __future__ import annotations

import os
import subprocess
import sys

from scheduler_core.model import PriorityDef, QueryPriority
from scheduler_core.tenant_querier_assignment import (
    TenantQuerierAssignment,
    reserved_queriers,
    shuffle_shard,
    tenant_seed,
)

QUERIERS = [f"q{i:02d}" for i in range(10)]


def test_the_seed_is_the_first_eight_bytes_of_sha256() -> None:
    assert tenant_seed("tenant-a") == 0x80A707AF7DC77EE1


def test_shards_are_pinned_so_every_release_agrees() -> None:
    assert shuffle_shard("tenant-a", QUERIERS, 3) == ("q02", "q05", "q09")
    assert shuffle_shard("tenant-b", QUERIERS, 3) == ("q04", "q06", "q09")


def test_shards_are_the_same_in_a_process_with_another_hash_seed() -> None:
    code = (
        "from scheduler_core.tenant_querier_assignment import shuffle_shard;"
        f"print([shuffle_shard(f't{{i}}', {QUERIERS!r}, 4) for i in range(50)])"
    )
    outputs = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        result = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(result.stdout)
    assert outputs == {str([shuffle_shard(f"t{i}", QUERIERS, 4) for i in range(50)]) + "\n"}


def test_zero_or_at_least_all_queriers_means_no_shard() -> None:
    assert shuffle_shard("t", QUERIERS, 0) is None
    assert shuffle_shard("t", QUERIERS, 10) is None
    assert shuffle_shard("t", QUERIERS, 11) is None
    assert shuffle_shard("t", [], 1) is None


def test_shards_have_the_asked_size_and_differ_between_tenants() -> None:
    shards = {shuffle_shard(f"t{i}", QUERIERS, 3) for i in range(40)}
    assert all(s is not None and len(s) == 3 and list(s) == sorted(s) for s in shards)
    assert len(shards) > 10


def test_reserved_counts_and_shares_follow_cortex() -> None:
    def lists(*defs: tuple[int, float]) -> list[int]:
        got = reserved_queriers(QUERIERS, [PriorityDef(p, r) for p, r in defs])
        return [got[q] for q in QUERIERS if q in got]

    assert lists((1, 2), (2, 3)) == [1, 1, 2, 2, 2]
    assert lists((1, 0.3), (2, 0.6)) == [1, 1, 1, 2, 2, 2, 2, 2, 2]
    assert lists((1, 0.4), (2, 0.6)) == []
    assert lists((1, 0.01)) == [1]
    assert lists((1, 2.9)) == [1, 1, 1]
    assert lists((1, 1.5), (2, 1.01)) == [1, 1, 2, 2]
    assert lists((1, 0)) == []


def test_reservations_are_taken_in_sorted_order_continuing_across_priorities() -> None:
    got = reserved_queriers(QUERIERS[:4], [PriorityDef(5, 1), PriorityDef(1, 2)])
    assert got == {"q00": 5, "q01": 1, "q02": 1}


class Recorder:
    def __init__(self) -> None:
        self.changes: list[tuple[str, object, object]] = []

    def __call__(self, tenant: str, old: object, new: object) -> None:
        self.changes.append((tenant, old, new))


def test_shard_changes_are_reported_once_per_tenant() -> None:
    seen = Recorder()
    assignment = TenantQuerierAssignment(seen)
    for name in QUERIERS[:3]:
        assignment.connect(name, 0.0)
    assignment.set_tenant("t", 2, QueryPriority())
    first = shuffle_shard("t", QUERIERS[:3], 2)
    assert seen.changes == [("t", None, first)]
    assignment.set_tenant("t", 2, QueryPriority())
    assert len(seen.changes) == 1
    assignment.set_tenant("t", 0, QueryPriority())
    assert seen.changes[-1] == ("t", first, None)


def test_forget_expired_returns_only_queriers_past_the_delay() -> None:
    assignment = TenantQuerierAssignment(Recorder())
    early = assignment.connect("early", 0.0)
    late = assignment.connect("late", 0.0)
    assignment.disconnect(early, 1.0, 10.0)
    assignment.disconnect(late, 5.0, 10.0)
    assert assignment.forget_expired(12.0, 10.0) == ["early"]
    assert sorted(assignment.queriers) == ["late"]


def test_each_querier_holds_its_own_reservations_through_every_change() -> None:
    assignment = TenantQuerierAssignment(Recorder())
    reserving = QueryPriority(
        enabled=True, priorities=(PriorityDef(priority=5, reserved_queriers=1),)
    )

    def agrees() -> bool:
        by_q = assignment.reserved_by_querier
        return all(q.reserved == by_q.get(name) for name, q in assignment.queriers.items())

    workers = [assignment.connect(name, 0.0) for name in QUERIERS[:4]]
    assignment.set_tenant("a", 0, reserving)
    assignment.set_tenant("b", 2, reserving)
    assert (assignment.queriers["q00"].reserved or {}).get("a") == 5 and agrees()
    assignment.disconnect(workers[0], 1.0, 0.0)  # q00 forgotten: "a" moves on
    assert (assignment.queriers["q01"].reserved or {}).get("a") == 5 and agrees()
    assignment.connect("q00", 2.0)  # back, and first in sorted order again
    assert (assignment.queriers["q00"].reserved or {}).get("a") == 5 and agrees()
    assignment.set_tenant("a", 0, QueryPriority())
    assignment.set_tenant("b", 0, QueryPriority())
    assert all(q.reserved is None for q in assignment.queriers.values()) and agrees()
