"""The what-if simulator's workload model: what a run replays, and what the operator varies.

A workload is a config-independent list of arrivals: each arrival is a
*kind* (a tenant and the classification inputs of one query, or a fixed
component), an arrival time and a service-time quantile. The simulator
classifies each kind under each config with the real classifier and
priority rules, and turns the quantile into a service time through the
workload's service model for the component the kind gets, so the live and
the proposed config see the very same arrivals and the same draws. Each
config is a `ConfigSet`; the operator's changes to the workload itself
are `Knobs`. Workloads come from recorded traffic
(`scheduler_core.whatif_workload.recent_workload`) or a named scenario
(`scheduler_core.whatif_scenarios`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler_core.model import QueueConfig, TenantLimits
from scheduler_core.validation import queue_config_to_dict, tenant_limits_to_dict

__all__ = [
    "MAX_REQUESTS",
    "START_FROM",
    "START_FROM_LIVE",
    "START_FROM_PROPOSAL",
    "ConfigSet",
    "Kind",
    "Knobs",
    "ServiceModel",
    "Workload",
    "WorkloadError",
    "check_size",
    "resize_fleet",
    "service_factor",
]

# At most this many arrivals per config: with two configs and the engine's
# speed on this machine class (>= 20,000 requests per second of wall time)
# a run stays well inside the call's time limit.
MAX_REQUESTS = 600_000

# What backlog a proposal's run of recent traffic starts its window with
# (`knobs.start_from`): the one the proposal itself would have built over
# the warm-up, as if applied long ago (the default), or the live one, the
# proposal applied at the window's start ("apply now": what was queued
# keeps the priority the live config gave it, as after a real save).
START_FROM_PROPOSAL = "proposal"
START_FROM_LIVE = "live"
START_FROM: tuple[str, ...] = (START_FROM_PROPOSAL, START_FROM_LIVE)


@dataclass(frozen=True, slots=True)
class ConfigSet:
    """The values one simulated scheduler runs: settings and per-tenant limits."""

    config: QueueConfig
    limits: Mapping[str, TenantLimits]

    def raw(self) -> dict[str, Any]:
        """Both as the store spells them (for the response's `workload.config`)."""
        return {
            "settings": queue_config_to_dict(self.config),
            "tenants": {t: tenant_limits_to_dict(v) for t, v in sorted(self.limits.items())},
        }


class WorkloadError(Exception):
    """The workload cannot be built as asked; `path` names the field to change.

    `prefix` holds path parts that are names, not dotted paths (a tenant ID
    may hold dots): `path` is under them.
    """

    def __init__(self, path: str, message: str, prefix: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.path = path
        self.prefix = prefix


@dataclass(frozen=True, slots=True)
class Knobs:
    """What the operator varies; None means the workload's own value."""

    arrival_factor: float = 1.0
    service_factor: Mapping[str, float] = field(default_factory=dict)
    queriers: int | None = None
    duration_seconds: float | None = None
    slow_share: float | None = None
    start_from: str = START_FROM_PROPOSAL


@dataclass(frozen=True, slots=True)
class Kind:
    """What the classifier sees of one sort of request; `hint` fixes its component."""

    tenant_id: str
    hint: str | None = None
    query: str = ""
    api_type: str = "query"
    start: float | None = None
    end: float | None = None
    step: float | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    now: float = 0.0


# (component, quantile in [0, 1), replayed second) -> service microseconds
ServiceModel = Callable[[str, float, int], int]


@dataclass(slots=True)
class Workload:
    """Arrivals (parallel lists, in time order) plus the fleet and service model."""

    kinds: list[Kind]
    times: list[int]
    kind_of: list[int]
    quantiles: list[float]
    seconds: list[int]
    service: ServiceModel
    fleet: list[tuple[str, int]]
    description: dict[str, Any]
    duration_seconds: float | None = None
    start_after_arrivals_at_zero: bool = False
    # Arrivals before this instant are a warm-up, not measured (see the engine).
    measure_from_us: int = 0
    # With an end, waits are those of dispatches before it (see the engine).
    measure_until_us: int | None = None
    # START_FROM_LIVE: a proposal's warm-up runs under the live config, and
    # the proposal is applied at `measure_from_us` (`scheduler_core.whatif`).
    start_from: str = START_FROM_PROPOSAL


def service_factor(knobs: Knobs, component: str) -> float:
    return float(knobs.service_factor.get(component, 1.0))


# What to change, by the field a too-large run is refused at.
_SHRINK = {
    "knobs.duration_seconds": "shorten duration_seconds or lower arrival_factor",
    "knobs.arrival_factor": "lower arrival_factor or shorten duration_seconds",
    "workload.window_seconds": "pick a shorter window or lower arrival_factor",
}


def check_size(expected: float, knobs: Knobs, own_seconds: float | None, own_path: str) -> None:
    """Refuse a run of more than `MAX_REQUESTS` arrivals, at the field that made it so.

    The error goes where the operator will look: the duration when they
    lengthened the workload past its own `own_seconds` (None: it has no
    duration to lengthen), else the arrival factor when they raised it,
    else `own_path`, the workload's own size (a busy replica's hour): the
    page marks the box the operator typed into, not a blank Duration box.
    """
    if expected <= MAX_REQUESTS:
        return
    if own_seconds is not None and (knobs.duration_seconds or 0.0) > own_seconds:
        path = "knobs.duration_seconds"
    elif knobs.arrival_factor > 1.0:
        path = "knobs.arrival_factor"
    else:
        path = own_path
    raise WorkloadError(
        path,
        f"this would simulate about {expected:,.0f} requests per config, at most "
        f"{MAX_REQUESTS:,}: {_SHRINK[path]}",
    )


def resize_fleet(fleet: Sequence[tuple[str, int]], wanted: int | None) -> list[tuple[str, int]]:
    """The fleet with queriers removed from its end or added (as `sim-querier-N`)."""
    out = list(fleet)
    if wanted is None:
        return out
    common = Counter(workers for _, workers in out).most_common(1)
    workers = common[0][0] if common else 4
    del out[wanted:]
    n = 1
    while len(out) < wanted:
        name = f"sim-querier-{n}"
        n += 1
        if all(q != name for q, _ in out):
            out.append((name, workers))
    return out
