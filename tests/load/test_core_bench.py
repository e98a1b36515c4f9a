"""Smoke test of the benchmark's functions on tiny sizes (no timing asserts)."""

from __future__ import annotations

import math

from tests.load.core_bench import (
    LAYOUTS,
    PairBench,
    format_report,
    measure_memory,
    run,
)


def test_a_tiny_run_measures_every_kind_and_prints_a_verdict_per_target() -> None:
    report = run(few=2, many=50, batch=128, repeats=1, snapshot_tenants=20, memory_sizes=((5, 4),))
    assert set(report.pairs.pair) == {
        f"{label}@{n}" for label, _, _ in LAYOUTS for n in ("2", "50", "2+idle50")
    }
    for cost in [report.pairs.deque, *report.pairs.pair.values(), *report.pairs.complete.values()]:
        assert 0 < cost < 0.01 and math.isfinite(cost)
    assert 0 < report.snapshot_seconds < 1
    text = format_report(report)
    assert text.count("PASS") + text.count("FAIL") == 3 * len(LAYOUTS) + 1


def test_timed_pairs_leave_the_queue_as_full_as_they_found_it() -> None:
    bench = PairBench("component-first", "querier-worker-priority", tenants=30)
    before = len(bench.queue)
    bench.timed_pairs(200)
    assert len(bench.queue) == before == 60
    assert not any(bench.queue.in_flight(f"r{i}") for i in range(bench.serial))


def test_memory_per_request_is_positive_and_counts_the_request_apart() -> None:
    result = measure_memory(tenants=10, per_tenant=10)
    assert result.queue_bytes > 0
    assert 50 < result.request_bytes < 2000


def test_idle_tenants_are_known_and_spread_between_the_busy_ones() -> None:
    bench = PairBench("tenant-first", "round-robin", tenants=4, idle=40)
    queue = bench.queue
    assert len(queue) == 8 and queue.tenant_length("tenant-0") == 2
    assert queue.tenant_limits("idle-tenant-3-9").max_outstanding == 1 << 30
    served = set()
    for worker, last in zip(bench.workers, bench.last, strict=True):
        got, index = queue.dequeue("querier-0", worker, last)
        assert got is not None
        served.add((got.tenant_id, index))
    assert served == {(f"tenant-{b}", b * 11 + 10) for b in range(4)}


def test_a_tiny_actor_run_measures_each_kind_and_prints_a_verdict_per_layout() -> None:
    from tests.load.actor_bench import ActorPairBench, format_actors, measure_actors

    result = measure_actors(tenants=3, idle_actors=50, batch=64, repeats=1)
    for kinds in result.pair.values():
        assert set(kinds) == {"plain", "generic", "actors", "idle"}
        assert all(0 < cost < 0.01 for cost in kinds.values())
    text = format_actors(result)
    assert text.count("PASS") + text.count("FAIL") == len(LAYOUTS)
    bench = ActorPairBench("tenant-first", "round-robin", 3, idle_actors=20)
    before = len(bench.queue)
    bench.timed_pairs(40)
    assert len(bench.queue) == before
    (leaf,) = [lf for lf in bench.queue.snapshot().leaves if lf.tenant_id == "tenant-0"]
    assert all(a.path[0] == "users" for a in leaf.actors)  # the idle actors left nothing
