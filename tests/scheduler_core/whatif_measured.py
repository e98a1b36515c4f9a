"""Recordings of a real Daphne, and the simulator's results held against what it measured.

Shared by the what-if tests that check the simulator against the real
scheduler: `test_whatif_faithfulness` (the live config replayed) and
`test_whatif_prediction` (a proposed config, then run for real).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scheduler_core.model import QueueConfig
from scheduler_core.traffic_record import WARMUP_SECONDS
from scheduler_core.validation import queue_config_from_dict, tenant_limits_from_dict
from scheduler_core.whatif_model import ConfigSet

__all__ = [
    "MIN_DISPATCHES",
    "Tolerance",
    "arrivals",
    "configs_of",
    "cut_warmup",
    "disagreements",
    "load_recording",
]

FIXTURES = Path(__file__).parent / "fixtures"
# Fewer dispatches than this make a mean or p99 too noisy to hold to a bound.
MIN_DISPATCHES = 100


def load_recording(name: str) -> dict[str, Any]:
    """Fixture `name`, its warm-up cut to a minute (WARMUP_SECONDS).

    What a live capture takes of these windows now, as far as they hold
    it: in `demo_window.json` and `change_after.json` no wait reached a
    minute (47 and 6 s at most), so no backlog reached back further;
    `change_before.json` (waits up to 107 s) holds 45 s of warm-up in all.
    """
    return cut_warmup(dict(json.loads((FIXTURES / name).read_text())), WARMUP_SECONDS)


def cut_warmup(recording: dict[str, Any], seconds: int) -> dict[str, Any]:
    """`recording` (changed in place) with at most its last `seconds` of warm-up."""
    first = -seconds // recording["bucket_seconds"]
    for key in recording["keys"]:
        key["counts"] = [c for c in key["counts"] if c[0] >= first]
    recording["warmup_seconds"] = min(seconds, recording["warmup_seconds"])
    return recording


def arrivals(measured: dict[str, Any]) -> int:
    """Requests the scheduler measured arriving in a window: dispatched or refused."""
    return sum(c["count"] for c in measured["by_component"].values()) + measured["rejected"]


def configs_of(raw: dict[str, Any]) -> ConfigSet:
    """The values the scheduler ran, from a recording's `config` (as the store holds it)."""
    config = queue_config_from_dict(raw["settings"], QueueConfig())
    limits = {t: tenant_limits_from_dict(block) for t, block in raw["tenants"].items()}
    return ConfigSet(config, limits)


@dataclass(frozen=True, slots=True)
class Tolerance:
    """How far a simulated figure may be from the measured one: share x measured + slack."""

    mean: tuple[float, float] = (0.25, 0.010)
    p99: tuple[float, float] = (0.25, 0.020)
    count: float = 0.05
    priority_mean: tuple[float, float] = (0.30, 0.020)


def _within(simulated: float, measured: float, bound: tuple[float, float]) -> bool:
    share, slack = bound
    return abs(simulated - measured) <= share * measured + slack


def disagreements(
    result: dict[str, Any],
    measured: dict[str, Any],
    tolerance: Tolerance = Tolerance(),
    count_scale: float = 1.0,
) -> list[str]:
    """Each figure of a simulated `result` outside `tolerance` of the `measured` one.

    Per component with at least MIN_DISPATCHES measured: mean and p99 wait
    and the dispatch count (the measured one times `count_scale`, for a
    replay of another window's arrivals); per priority level with as many:
    the mean wait.
    """
    bad = []
    for component, real in measured["by_component"].items():
        if real["count"] < MIN_DISPATCHES:
            continue
        sim = result["by_component"].get(component, {"mean": 0.0, "p99": 0.0, "count": 0})
        if not _within(sim["mean"], real["mean"], tolerance.mean):
            bad.append(f"{component} mean {sim['mean']:.4f} vs {real['mean']:.4f}")
        if not _within(sim["p99"], real["p99"], tolerance.p99):
            bad.append(f"{component} p99 {sim['p99']:.4f} vs {real['p99']:.4f}")
        expected = real["count"] * count_scale
        if not _within(sim["count"], expected, (tolerance.count, 0)):
            bad.append(f"{component} count {sim['count']} vs {expected:.0f}")
    for level, real in measured["by_priority"].items():
        if real["count"] < MIN_DISPATCHES:
            continue
        sim = result["by_priority"].get(level, {"mean": float("inf")})
        if not _within(sim["mean"], real["mean"], tolerance.priority_mean):
            bad.append(f"priority {level} mean {sim['mean']:.4f} vs {real['mean']:.4f}")
    return bad
