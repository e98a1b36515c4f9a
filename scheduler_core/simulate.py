"""Discrete-event fairness simulation of Mimir's slow-consumer scenario.

`python -m scheduler_core.simulate` drives a real `RequestQueue` on a virtual
clock through `scheduler_core.whatif_engine` (a heap of events, integer
microseconds, no sleeps, no asyncio), the engine the what-if simulator runs
too, the way the runtime does: every free worker asks for work with its own
`last_tenant_index`; a worker that gets nothing waits, and waiting workers are
retried, in the order they started waiting, whenever something is enqueued.

The setup follows Mimir's `TestMultiDimensionalQueueAlgorithmSlowConsumerEffects`
(the benchmark behind the numbers in its request-queue design notes):
8 queriers x 12 workers, 1000 requests all enqueued before any worker starts,
ingester queries take 1 ms, "slow" queries 100 ms, where the slow share is
split half `store-gateway` and half `ingester-and-store-gateway` (both are
reported as store-gateway, as Mimir does), `max_queriers_per_tenant` = 7 so
shuffle sharding is on, tenants assigned round-robin to requests. Queue time
is measured when a worker takes the request, as in Mimir. Because the clock
is virtual the run is exact and repeatable for a seed; Mimir's numbers came
from real goroutines and sleeps, so only their shape is comparable.
"""

from __future__ import annotations

import argparse
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from scheduler_core.model import (
    BOTH,
    INGESTER,
    STORE_GATEWAY,
    ComponentSelection,
    Layout,
    QueueConfig,
    Request,
    TenantLimits,
)
from scheduler_core.simulate_actors import report as fairness_report
from scheduler_core.simulate_actors import run_fairness
from scheduler_core.whatif_engine import US, EngineInput, run_engine

__all__ = [
    "MIMIR_PUBLISHED",
    "SCENARIOS",
    "STRATEGIES",
    "ComponentStats",
    "Scenario",
    "ScenarioResult",
    "Strategy",
    "main",
    "run_scenario",
    "scenario_input",
]

_US = US  # virtual time unit: microseconds, so equal latencies tie exactly
_SLOW = STORE_GATEWAY  # the reporting group of every slowed-down query


@dataclass(frozen=True, slots=True)
class Strategy:
    """One tree layout and component selection to compare."""

    name: str
    layout: Layout
    selection: ComponentSelection


STRATEGIES: tuple[Strategy, ...] = (
    Strategy("tenant-first", "tenant-first", "round-robin"),
    Strategy("component-first RR", "component-first", "round-robin"),
    Strategy("component-first QWQP", "component-first", "querier-worker-priority"),
)


@dataclass(frozen=True, slots=True)
class Scenario:
    """A traffic mix: (tenant id, share of slow queries) per tenant.

    `arrival_rate` None enqueues every request at time 0 (Mimir's setup);
    otherwise arrivals are Poisson at that many requests per second.
    """

    name: str
    tenants: tuple[tuple[str, float], ...]
    requests: int = 1000
    queriers: int = 8
    workers: int = 12
    max_queriers: int = 7
    fast_latency: float = 0.001
    slow_latency: float = 0.100
    arrival_rate: float | None = None


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("1 tenant, 10% slow", (("0", 0.10),)),
    Scenario("1 tenant, 25% slow", (("0", 0.25),)),
    Scenario("1 tenant, 50% slow", (("0", 0.50),)),
    Scenario("1 tenant, 75% slow", (("0", 0.75),)),
    Scenario("1 tenant, 90% slow", (("0", 0.90),)),
    Scenario("2 tenants, 50/50 slow", (("0", 0.50), ("1", 0.50))),
)

# Mimir's request-queue design notes, "Sample Benchmark Results": mean seconds
# in queue, (round-robin tree ingester, QWQP ingester, round-robin tree
# store-gateway, QWQP store-gateway). The round-robin tree there is
# tenant -> component round-robin, i.e. our tenant-first layout.
MIMIR_PUBLISHED: dict[str, tuple[float, float, float, float]] = {
    "1 tenant, 10% slow": (0.1046, 0.0194, 0.0079, 0.0271),
    "1 tenant, 25% slow": (0.2738, 0.0159, 0.1084, 0.1177),
    "1 tenant, 50% slow": (0.3894, 0.0118, 0.2471, 0.2530),
    "1 tenant, 75% slow": (0.2608, 0.0053, 0.3999, 0.4056),
    "1 tenant, 90% slow": (0.0780, 0.0026, 0.4917, 0.4929),
    "2 tenants, 50/50 slow": (0.3586, 0.0106, 0.2149, 0.2113),
}


@dataclass(frozen=True, slots=True)
class ComponentStats:
    """Seconds in queue of one reporting group."""

    count: int
    mean: float
    p99: float


@dataclass(frozen=True, slots=True)
class ScenarioResult:
    """What one (scenario, strategy, seed) run measured, in virtual seconds."""

    scenario: str
    strategy: str
    seed: int
    enqueued: int
    completed: int
    left_queued: int
    makespan: float
    stats: dict[str, ComponentStats] = field(default_factory=dict)
    waits: tuple[tuple[str, float], ...] = ()  # (request id, seconds) in dequeue order
    served_by: tuple[str, ...] = ()  # queriers that served at least one request


def _requests(scenario: Scenario, seed: int) -> list[tuple[int, Request]]:
    """(arrival time in us, request) pairs; the same for every strategy."""
    rng = random.Random(seed)
    tenants = scenario.tenants
    out: list[tuple[int, Request]] = []
    now = 0
    for i in range(scenario.requests):
        tenant, slow = tenants[i % len(tenants)]
        draw = rng.random()
        component = INGESTER if draw >= slow else STORE_GATEWAY if draw < slow / 2 else BOTH
        if scenario.arrival_rate:
            now += round(rng.expovariate(scenario.arrival_rate) * _US)
        out.append((now, Request(id=f"r{i}", tenant_id=tenant, component=component)))
    return out


def _stats(waits: Sequence[float]) -> ComponentStats:
    if not waits:
        return ComponentStats(0, 0.0, 0.0)
    ordered = sorted(waits)
    rank = max(1, math.ceil(0.99 * len(ordered)))
    return ComponentStats(len(ordered), sum(ordered) / len(ordered), ordered[rank - 1])


def scenario_input(scenario: Scenario, strategy: Strategy, seed: int) -> EngineInput:
    """The engine's input for one run: Mimir's queue config, fleet and arrivals."""
    requests = _requests(scenario, seed)
    config = QueueConfig(
        layout=strategy.layout,
        component_selection=strategy.selection,
        max_outstanding_requests_per_tenant=max(scenario.requests, 1),
    )
    fast, slow = round(scenario.fast_latency * US), round(scenario.slow_latency * US)
    return EngineInput(
        config=config,
        limits={t: TenantLimits(max_queriers=scenario.max_queriers) for t, _ in scenario.tenants},
        fleet=[(f"querier-{q}", scenario.workers) for q in range(scenario.queriers)],
        times=[at for at, _ in requests],
        tenants=[r.tenant_id for _, r in requests],
        components=[r.component for _, r in requests],
        priorities=[0] * len(requests),
        services=[fast if r.component == INGESTER else slow for _, r in requests],
        worker_order_seed=seed,
        start_after_arrivals_at_zero=True,
        keep_log=True,
    )


def run_scenario(scenario: Scenario, strategy: Strategy, seed: int = 1) -> ScenarioResult:
    """Run one scenario under one strategy; deterministic for a seed."""
    run = run_engine(scenario_input(scenario, strategy, seed))
    groups: dict[str, list[float]] = {INGESTER: [], _SLOW: []}
    for _, component, wait in run.log:
        groups[INGESTER if component == INGESTER else _SLOW].append(wait)
    return ScenarioResult(
        scenario=scenario.name,
        strategy=strategy.name,
        seed=seed,
        enqueued=scenario.requests,
        completed=run.completed,
        left_queued=run.left_queued,
        makespan=run.makespan,
        stats={group: _stats(values) for group, values in groups.items()},
        waits=tuple((rid, wait) for rid, _, wait in run.log),
        served_by=tuple(sorted(run.served_by)),
    )


def _cell(stats: ComponentStats) -> str:
    return f"{stats.mean:7.4f} {stats.p99:7.4f}"


def _table(
    title: str,
    group: str,
    rows: dict[str, dict[str, ScenarioResult]],
    published: int,
    with_mimir: bool,
) -> list[str]:
    """One table: Mimir's two means beside our mean/p99 per strategy.

    Mimir's columns stay blank unless the run used Mimir's setup, since
    other arrival patterns are not comparable with its figures.
    """
    head = f"{'scenario':24} {'Mimir RR':>8} {'Mimir QW':>8}"
    for strategy in STRATEGIES:
        head += f" | {strategy.name:>22}"
    sub = f"{'':24} {'mean':>8} {'mean':>8}" + f" | {'mean':>14} {'p99':>7}" * len(STRATEGIES)
    lines = [title, head, sub, "-" * len(head)]
    for name, by_strategy in rows.items():
        mimir = MIMIR_PUBLISHED.get(name) if with_mimir else None
        line = f"{name:24} "
        line += f"{mimir[published]:8.4f} {mimir[published + 1]:8.4f}" if mimir else " " * 17
        for strategy in STRATEGIES:
            line += f" | {_cell(by_strategy[strategy.name].stats[group]):>22}"
        lines.append(line)
    return lines


def _describe(scenario: Scenario, seed: int) -> str:
    arrival = (
        "all enqueued at t=0 before any worker starts (as in Mimir's test)"
        if not scenario.arrival_rate
        else f"Poisson arrivals at {scenario.arrival_rate:g}/s"
    )
    return (
        f"Setup (seed {seed}): {scenario.queriers} queriers x {scenario.workers} workers, "
        f"{scenario.requests} requests, {arrival}; ingester {scenario.fast_latency * 1e3:g} ms, "
        f"slow {scenario.slow_latency * 1e3:g} ms (slow = half store-gateway, half "
        "ingester-and-store-gateway, reported together as store-gateway); "
        f"max_queriers_per_tenant {scenario.max_queriers}; tenants take requests in turn; "
        "virtual clock, queue time measured at dequeue. QWQP maps worker w to the "
        "(w % n)-th of the n components present, as Mimir does, and moves on to the next "
        "present component when that one has nothing for it (Mimir's current code does too); "
        "Mimir's figures come from real sleeps, so compare shape."
    )


def report(results: dict[str, dict[str, ScenarioResult]], scenario: Scenario, seed: int) -> str:
    """The printed report: ingester and store-gateway tables, ratio, setup."""
    mimir = scenario.arrival_rate is None and scenario.requests == 1000
    lines = _table("Ingester queue time (s): mean p99", INGESTER, results, 0, mimir)
    lines.append("")
    lines += _table("Store-gateway queue time (s): mean p99", _SLOW, results, 2, mimir)
    lines.append("")
    half = results.get("1 tenant, 50% slow")
    if half is not None:
        tf = half["tenant-first"].stats[INGESTER].mean
        qw = half["component-first QWQP"].stats[INGESTER].mean
        ratio = tf / qw if qw else math.inf
        verdict = "PASS" if ratio >= 5 else "FAIL"
        lines.append(
            f"Ingester mean at 50% slow, tenant-first / QWQP: {tf:.4f} / {qw:.4f} = "
            f"{ratio:.1f}x (target >= 5x) {verdict}"
        )
    lost = [
        f"{r.scenario} / {r.strategy}"
        for by in results.values()
        for r in by.values()
        if r.completed != r.enqueued or r.left_queued
    ]
    lines.append("Every request completed: " + ("yes" if not lost else "NO: " + ", ".join(lost)))
    lines.append(_describe(scenario, seed))
    return "\n".join(lines)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m scheduler_core.simulate", description=__doc__)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--queriers", type=int, default=8)
    parser.add_argument("--workers", type=int, default=12, help="workers per querier (>= 4)")
    parser.add_argument("--max-queriers", type=int, default=7, help="0 disables sharding")
    parser.add_argument(
        "--rate", type=float, default=0.0, help="Poisson arrivals per second (0: all at t=0)"
    )
    parser.add_argument(
        "--scenario", default="all", help="run only scenarios whose name contains this"
    )
    parser.add_argument(
        "--loki-fairness",
        action="store_true",
        help="instead: Loki's TestQueryFairness (actor sub-queues), beside Loki's figures",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    if args.loki_fairness:
        print(fairness_report([run_fairness(False), run_fairness(True)]))
        return 0
    chosen = [s for s in SCENARIOS if args.scenario == "all" or args.scenario in s.name]
    if not chosen:
        print(f"no scenario matches {args.scenario!r}")
        return 2
    results: dict[str, dict[str, ScenarioResult]] = {}
    scenario = chosen[0]
    for base in chosen:
        scenario = Scenario(
            base.name,
            base.tenants,
            requests=args.requests,
            queriers=args.queriers,
            workers=args.workers,
            max_queriers=args.max_queriers,
            arrival_rate=args.rate or None,
        )
        results[scenario.name] = {s.name: run_scenario(scenario, s, args.seed) for s in STRATEGIES}
    print(report(results, scenario, args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
