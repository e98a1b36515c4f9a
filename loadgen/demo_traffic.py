"""Demo traffic for `manage.py loadgen`: tenants, queries, latencies, the slowdown knob.

The mix is built for the demo config (`seed_demo_config`): each tenant sends
queries whose PromQL time ranges make the scheduler pick each component,
and some match that tenant's priority rules (alert queries, the on-call
dashboard, instant queries, long ranges, fine steps). Most tenants' requests
name an actor (`X-Loki-Actor-Path`: a user, a dashboard, a job), so the
inspector's actor sub-queues have something to show. Queriers take a
per-component time; store-gateway work is multiplied by a factor read from
VAR_DIR/loadgen.json every second, so an operator can slow it down live
(`manage.py loadgen_slowdown 10`) and watch the queue tree react.

loadgen.cortex_traffic sends part of the same mix over Cortex's gRPC protocol.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

from django.conf import settings

__all__ = [
    "ACTORS",
    "ACTOR_HEADER",
    "LATENCY",
    "MAX_SLOWDOWN",
    "TENANT_WEIGHTS",
    "latency_for",
    "make_request",
    "read_slowdown",
    "slowdown_path",
    "write_slowdown",
]

HOUR = 3600.0
DAY = 86400.0

# Seconds of work per component (uniform in the range), before the slowdown.
# With the default rate these keep the demo's queriers busy enough that
# queues form and drain on their own and a slowdown backs them up at once;
# team-b's does not drain, by design: its demo rule reserves two of its
# three queriers for its instant queries (the README's "What the demo shows").
LATENCY: dict[str, tuple[float, float]] = {
    "ingester": (0.01, 0.05),
    "store-gateway": (0.2, 0.8),
    "ingester-and-store-gateway": (0.3, 1.0),
    "unknown": (0.02, 0.1),
}
# The largest factor `loadgen_slowdown` sets: 1000 turns store-gateway's
# 0.8 s into 13 minutes. Read back the same way, so a hand-edited file saying
# `Infinity` does not park every querier worker forever.
MAX_SLOWDOWN = 1000.0
SLOWED = frozenset({"store-gateway", "ingester-and-store-gateway"})
TENANT_WEIGHTS: dict[str, float] = {"team-a": 4, "team-b": 3, "team-c": 2, "batch": 1}

# The actor sub-queues each tenant's requests wait in (the default
# `actor_path_header`), taken in turn by request number so the rest of the
# mix, drawn from the seeded generator, is the same with or without them.
# team-c sends none: requests without a path wait in the leaf's own queue.
ACTOR_HEADER = "X-Loki-Actor-Path"
ACTORS: dict[str, tuple[str, ...]] = {
    "team-a": ("users|alice", "users|bob", "grafana|oncall"),
    "team-b": ("users|carol", "users|dave", "grafana|capacity", "api|ci"),
    "batch": ("jobs|nightly-report", "jobs|backfill"),
}

_QUERIES = (
    "sum by (job) (rate(http_requests_total[5m]))",
    "histogram_quantile(0.99, sum by (le) (rate(request_duration_seconds_bucket[5m])))",
    "avg_over_time(node_load1[10m])",
    "max by (instance) (process_resident_memory_bytes)",
)


def slowdown_path() -> Path:
    return Path(settings.VAR_DIR) / "loadgen.json"


def read_slowdown() -> float:
    """The current factor; 1 when the file is missing, unreadable or out of range."""
    try:
        value = float(json.loads(slowdown_path().read_text()).get("store_gateway_slowdown", 1.0))
    except (OSError, ValueError, AttributeError, TypeError):
        return 1.0
    return value if 0 < value <= MAX_SLOWDOWN else 1.0


def write_slowdown(factor: float) -> Path:
    path = slowdown_path()
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"store_gateway_slowdown": factor}))
    tmp.replace(path)  # atomic: the generator never reads half a file
    return path


def latency_for(component: str, slowdown: float, rng: random.Random) -> float:
    low, high = LATENCY.get(component, LATENCY["unknown"])
    seconds = rng.uniform(low, high)
    return seconds * slowdown if component in SLOWED else seconds


def _time_range(rng: random.Random, now: float) -> tuple[float, float]:
    """Mostly recent (ingesters), some old (store-gateway), some spanning both."""
    roll = rng.random()
    if roll < 0.5:
        return now - rng.choice((0.25, 1, 3)) * HOUR, now
    if roll < 0.8:
        end = now - rng.uniform(1, 7) * DAY
        return end - rng.choice((1, 6)) * HOUR, end
    return now - rng.choice((1, 2, 7)) * DAY, now


def make_request(rng: random.Random, n: int) -> dict[str, Any]:
    """One `enqueue` message of the demo mix."""
    tenant = rng.choices(list(TENANT_WEIGHTS), weights=list(TENANT_WEIGHTS.values()))[0]
    now = time.time()
    now -= now % 15
    start, end = _time_range(rng, now)
    msg: dict[str, Any] = {
        "type": "enqueue",
        "id": n,
        "tenant": tenant,
        "query": rng.choice(_QUERIES),
        "api_type": "query_range",
        "start": start,
        "end": end,
        "step": rng.choice((15, 60, 300)),
        "headers": {"User-Agent": "loadgen/1.0"},
    }
    roll = rng.random()
    if tenant == "team-a" and roll < 0.1:
        msg["query"] = 'sum(ALERTS{alertstate="firing"})'
    elif tenant == "team-a" and roll < 0.2:
        msg["headers"] = {
            "User-Agent": "grafana/11.0",
            "X-Dashboard-Uid": "oncall",
            "X-Panel-Id": "2",
        }
    elif tenant == "team-b" and roll < 0.3:
        msg.update(api_type="query", start=end, end=end, step=None)
    elif tenant == "batch" and roll < 0.5:
        msg["step"] = 30
    actors = ACTORS.get(tenant)
    if actors:
        msg["headers"][ACTOR_HEADER] = actors[n % len(actors)]
    return msg
