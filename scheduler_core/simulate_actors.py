"""Loki's query-fairness test on our queue: actor sub-queues on a virtual clock.

`python -m scheduler_core.simulate --loki-fairness` (or `python -m
scheduler_core.simulate_actors`) replays the setup of Loki's
`TestQueryFairness` (pkg/scheduler/queue/dequeue_qos_test.go, in the pull
request that wired hierarchical queues into Loki's scheduler): one tenant,
actor "a" with 100 sub-queries of 100 ms and actor "b" with 20 of 50 ms, all
enqueued before 5 queriers (one worker each) start pulling, each querier
taking its next request as soon as it finishes one. An actor's duration is
when its last sub-query finished. Run twice: with the actor paths ignored
(`max_queue_hierarchy_levels` 0: one FIFO, a's work first) and with them
(a and b take turns). Loki's figures came from real goroutines and sleeps;
ours from a real `RequestQueue` on a virtual clock, so they are exact.
"""

from __future__ import annotations

import argparse
import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from scheduler_core.model import QueueConfig, Request
from scheduler_core.queue import RequestQueue

__all__ = ["LOKI_PUBLISHED", "FairnessResult", "main", "report", "run_fairness"]

# Loki's output in the pull request (seconds): duration of each actor.
LOKI_PUBLISHED: dict[bool, dict[str, float]] = {
    False: {"a": 2.007765568, "b": 2.209088331},
    True: {"a": 2.270931324, "b": 0.605283144},
}
# (actor, sub-queries, seconds each): Loki's numSubRequestsActorA/B and sleeps.
ACTORS: tuple[tuple[str, int, float], ...] = (("a", 100, 0.100), ("b", 20, 0.050))
QUERIERS = 5


@dataclass(frozen=True, slots=True)
class FairnessResult:
    """One run: when each actor's last sub-query finished, and the total."""

    hierarchical: bool
    durations: dict[str, float]
    total: float
    completed: int


def run_fairness(hierarchical: bool, queriers: int = QUERIERS) -> FairnessResult:
    """Run Loki's setup once on a virtual clock; deterministic."""
    now = [0.0]
    levels = 3 if hierarchical else 0
    queue = RequestQueue(
        QueueConfig(max_outstanding_requests_per_tenant=1024, max_queue_hierarchy_levels=levels),
        clock=lambda: now[0],
    )
    service: dict[str, float] = {}
    for actor, count, seconds in ACTORS:
        for i in range(count):
            rid = f"{actor}-{i}"
            queue.enqueue(Request(id=rid, tenant_id="tenant", actor_path=(actor,)))
            service[rid] = seconds
    workers = [(f"querier-{q}", queue.connect_querier(f"querier-{q}")) for q in range(queriers)]
    last = [-1] * len(workers)
    # (instant the worker is free, worker index): every querier starts at 0.
    free = [(0.0, i) for i in range(len(workers))]
    heapq.heapify(free)
    durations: dict[str, float] = {}
    running: dict[int, str] = {}
    completed = 0
    while free:
        at, i = heapq.heappop(free)
        now[0] = at
        finished = running.pop(i, None)
        if finished is not None:
            queue.complete(finished)
            completed += 1
            actor = finished.split("-", 1)[0]
            durations[actor] = max(durations.get(actor, 0.0), at)
        querier, worker = workers[i]
        request, last[i] = queue.dequeue(querier, worker, last[i])
        if request is None:
            continue  # nothing left: this querier is done
        running[i] = request.id
        heapq.heappush(free, (at + service[request.id], i))
    return FairnessResult(hierarchical, durations, max(durations.values()), completed)


def report(results: Sequence[FairnessResult]) -> str:
    """Our durations beside Loki's published ones."""
    lines = [
        "Loki TestQueryFairness: duration of each actor (s), ours beside Loki's published run",
        f"{'hierarchical queues':20} {'actor':>5} {'ours':>8} {'Loki':>8}",
    ]
    for result in results:
        for actor in sorted(result.durations):
            loki = LOKI_PUBLISHED[result.hierarchical][actor]
            lines.append(
                f"{str(result.hierarchical).lower():20} {actor:>5} "
                f"{result.durations[actor]:8.3f} {loki:8.3f}"
            )
    off, on = (next(r for r in results if r.hierarchical is h) for h in (False, True))
    speedup = off.durations["b"] / on.durations["b"]
    lines.append(
        f"Actor b finishes {speedup:.1f}x sooner with sub-queues (Loki: "
        f"{LOKI_PUBLISHED[False]['b'] / LOKI_PUBLISHED[True]['b']:.1f}x); every request "
        f"completed: {'yes' if all(r.completed == 120 for r in results) else 'NO'}"
    )
    lines.append(
        "Setup: one tenant; actor a 100 sub-queries x 100 ms, actor b 20 x 50 ms, all "
        f"enqueued first; {QUERIERS} queriers x 1 worker; without hierarchical queues the "
        "actor path is ignored (max_queue_hierarchy_levels 0), with them a and b take turns."
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scheduler_core.simulate_actors")
    parser.parse_args(argv)
    print(report([run_fairness(False), run_fairness(True)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
