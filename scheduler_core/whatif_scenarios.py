"""The what-if simulator's named scenarios, each with its own documented config.

- `mimir-slow-consumer`: Mimir's published slow-consumer benchmark, as
  `scheduler_core.simulate` reproduces it (same arrivals, same draws, same
  worker order for a seed): 1 tenant, 1000 requests enqueued at t=0 before
  any worker asks, 8 queriers x 12 workers, `max_queriers_per_tenant` 7,
  ingester 1 ms, slow 100 ms (half store-gateway, half
  ingester-and-store-gateway), a `slow_share` (knob, default 0.5) of the
  requests slow. Its config: tenant-first with round-robin (Mimir's
  "round-robin tree"), an outstanding limit no run reaches.
  `arrival_factor` scales the 1000 requests; `duration_seconds` does not
  apply (everything arrives at once): a request that sets it is refused at
  `knobs.duration_seconds` (`NO_DURATION`), as `slow_share` is elsewhere.
- `cortex-seed`: the Cortex query-priority seed (its PR's end-to-end test):
  tenant `tenant-1` with the seed's example `query_priority` (priority 3
  for `special_query`, reserving 1 querier; 2 for `max` over the last 2h; 1
  for data within 24h), and the seed's three instant queries sent
  continuously: `max` at now (ingester, priority 2), `avg` 12h ago
  (ingester-and-store-gateway, priority 1), `min` 32h ago (store-gateway,
  priority 0), 13 per second each (Poisson), for 300 s; exponential
  service times with means 0.1 s, 0.3 s and 0.5 s; 4 queriers x 4
  workers, so with the reserved querier idle the other 12 workers are about
  97% busy. The seed's claims, reproduced qualitatively: priority 2 waits
  less than 1, which waits less than 0, and the querier reserved for
  priority 3 sits idle since no priority-3 query comes.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler_core.model import BOTH, COMPONENTS, INGESTER, STORE_GATEWAY, UNKNOWN, QueueConfig
from scheduler_core.simulate import STRATEGIES, Scenario, scenario_input
from scheduler_core.validation import tenant_limits_from_dict
from scheduler_core.whatif_engine import US
from scheduler_core.whatif_model import (
    ConfigSet,
    Kind,
    Knobs,
    ServiceModel,
    Workload,
    WorkloadError,
    check_size,
    service_factor,
)

__all__ = [
    "CORTEX_SEED",
    "NO_DURATION",
    "SCENARIO_KNOBS",
    "SCENARIO_NAMES",
    "SEED_TENANT_CONFIG",
    "scenario_base",
    "scenario_workload",
]

SCENARIO_NAMES: tuple[str, ...] = ("mimir-slow-consumer", "cortex-seed")
MIMIR_QUERIERS = 8
# `knobs.duration_seconds` for mimir-slow-consumer: refused, not ignored.
NO_DURATION = (
    "the mimir-slow-consumer scenario has no duration: every request arrives at t=0 "
    "(change how many with knobs.arrival_factor)"
)

# The seed's example tenant block (Cortex PR "query priority").
SEED_TENANT_CONFIG: dict[str, Any] = {
    "query_priority": {
        "enabled": True,
        "default_priority": 0,
        "priorities": [
            {
                "priority": 3,
                "reserved_queriers": 1,
                "query_attributes": [{"regex": "special_query"}],
            },
            {
                "priority": 2,
                "query_attributes": [{"regex": "max", "time_window": {"start": "2h", "end": "0h"}}],
            },
            {"priority": 1, "query_attributes": [{"time_window": {"start": "24h"}}]},
        ],
    }
}


@dataclass(frozen=True, slots=True)
class _CortexSeed:
    """The cortex-seed scenario's documented setup."""

    tenant: str = "tenant-1"
    # The seed's three queries, each an instant query this many hours ago.
    queries: tuple[tuple[str, float], ...] = (
        ("max({__name__=~'metric_[0-4]'})", 0.0),
        ("avg({__name__=~'metric_[1-5]'})", 12.0),
        ("min({__name__=~'metric_[2-6]'})", 32.0),
    )
    rate_per_query: float = 13.0  # Poisson, requests per second
    duration_seconds: float = 300.0
    queriers: int = 4
    workers: int = 4
    # Mean service seconds (exponential): with one querier reserved for
    # priority 3, the other 12 workers are about 97% busy, so queues form.
    service_mean: tuple[tuple[str, float], ...] = (
        (INGESTER, 0.1),
        (BOTH, 0.3),
        (STORE_GATEWAY, 0.5),
        (UNKNOWN, 0.3),
    )
    now: float = 1_700_000_000.0  # the wall clock the queries are classified at


CORTEX_SEED = _CortexSeed()

# What a blank knob means in each scenario: (its duration in seconds, None
# when it has none; its queriers). The page says so beside those boxes.
SCENARIO_KNOBS: dict[str, tuple[float | None, int]] = {
    "mimir-slow-consumer": (None, MIMIR_QUERIERS),
    "cortex-seed": (CORTEX_SEED.duration_seconds, CORTEX_SEED.queriers),
}


def _constant_service(latency: Mapping[str, float], knobs: Knobs) -> ServiceModel:
    table = {c: round(latency[c] * service_factor(knobs, c) * US) for c in COMPONENTS}
    return lambda component, u, second: table[component]


def _exponential_service(means: Mapping[str, float], knobs: Knobs) -> ServiceModel:
    scaled = {c: means[c] * service_factor(knobs, c) * US for c in COMPONENTS}
    return lambda component, u, second: round(-scaled[component] * math.log1p(-u))


def _mimir(knobs: Knobs, seed: int) -> Workload:
    if knobs.duration_seconds is not None:
        raise WorkloadError("knobs.duration_seconds", NO_DURATION)
    share = 0.5 if knobs.slow_share is None else float(knobs.slow_share)
    requests = max(1, round(1000 * knobs.arrival_factor))
    check_size(requests, knobs, None, "knobs.arrival_factor")
    scenario = Scenario(
        f"1 tenant, {share:.0%} slow",
        (("0", share),),
        requests=requests,
        queriers=MIMIR_QUERIERS if knobs.queriers is None else knobs.queriers,
    )
    run = scenario_input(scenario, STRATEGIES[0], seed)
    kinds = [Kind("0", hint=c) for c in COMPONENTS]
    index = {c: i for i, c in enumerate(COMPONENTS)}
    latency = {c: scenario.fast_latency if c == INGESTER else scenario.slow_latency for c in index}
    return Workload(
        kinds=kinds,
        times=list(run.times),
        kind_of=[index[c] for c in run.components],
        quantiles=[0.0] * requests,
        seconds=[0] * requests,
        service=_constant_service(latency, knobs),
        fleet=list(run.fleet),
        start_after_arrivals_at_zero=True,
        description={
            "kind": "scenario",
            "name": "mimir-slow-consumer",
            "requests": requests,
            "slow_share": share,
            "queriers": scenario.queriers,
            "workers": scenario.queriers * scenario.workers,
            "duration_seconds": None,
            "setup": "Mimir's slow-consumer benchmark: every request enqueued at t=0 before "
            "any worker asks; 12 workers per querier; ingester 1 ms, slow 100 ms (half "
            "store-gateway, half ingester-and-store-gateway); max 7 queriers per tenant",
        },
    )


def _cortex_seed(knobs: Knobs, seed: int) -> Workload:
    setup = CORTEX_SEED
    duration = float(knobs.duration_seconds or setup.duration_seconds)
    rate = setup.rate_per_query * len(setup.queries) * knobs.arrival_factor
    check_size(rate * duration, knobs, setup.duration_seconds, "knobs.duration_seconds")
    hour = 3600.0
    kinds = [
        Kind(
            setup.tenant,
            query=q,
            start=setup.now - ago * hour,
            end=setup.now - ago * hour,
            now=setup.now,
        )
        for q, ago in setup.queries
    ]
    rng = random.Random(seed)
    times: list[int] = []
    kind_of: list[int] = []
    quantiles: list[float] = []
    at = 0.0
    while rate > 0:
        at += rng.expovariate(rate)
        if at >= duration:
            break
        times.append(round(at * US))
        kind_of.append(rng.randrange(len(kinds)))
        quantiles.append(rng.random())
    queriers = setup.queriers if knobs.queriers is None else knobs.queriers
    return Workload(
        kinds=kinds,
        times=times,
        kind_of=kind_of,
        quantiles=quantiles,
        seconds=[0] * len(times),
        service=_exponential_service(dict(setup.service_mean), knobs),
        fleet=[(f"querier-{q + 1}", setup.workers) for q in range(queriers)],
        duration_seconds=duration,
        description={
            "kind": "scenario",
            "name": "cortex-seed",
            "requests": len(times),
            "duration_seconds": duration,
            "queriers": queriers,
            "workers": queriers * setup.workers,
            "setup": f"the Cortex query-priority seed: tenant {setup.tenant} with the seed's "
            f"example query_priority; its three instant queries (max at now, avg 12h ago, "
            f"min 32h ago), {setup.rate_per_query:g}/s each (Poisson); exponential service "
            "times, mean 0.1 s ingester, 0.3 s ingester-and-store-gateway, 0.5 s "
            f"store-gateway; {setup.queriers} queriers x {setup.workers} workers",
        },
    )


def scenario_workload(name: str, knobs: Knobs, seed: int) -> Workload:
    """A named scenario's arrivals under the knobs; deterministic for the seed."""
    if name == "mimir-slow-consumer":
        return _mimir(knobs, seed)
    if name == "cortex-seed":
        return _cortex_seed(knobs, seed)
    raise WorkloadError("workload.name", f"unknown scenario {name!r}")


def scenario_base(name: str) -> ConfigSet:
    """A named scenario's own documented config (the base `proposed` overrides)."""
    if name == "mimir-slow-consumer":
        config = QueueConfig(max_outstanding_requests_per_tenant=1_000_000)
        return ConfigSet(config, {"0": tenant_limits_from_dict({"max_queriers_per_tenant": 7})})
    if name == "cortex-seed":
        limits = tenant_limits_from_dict(SEED_TENANT_CONFIG)
        return ConfigSet(QueueConfig(), {CORTEX_SEED.tenant: limits})
    raise WorkloadError("workload.name", f"unknown scenario {name!r}")
