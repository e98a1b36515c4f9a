"""The what-if request body (`POST /api/v1/simulate/`), parsed and checked field by field.

One pass collects every problem with its path (`knobs.service_factor.store-gateway`,
`workload.window_seconds`), so the REST API answers 400 with all of them at
once, in the same nested shape as every other endpoint. The proposed
settings and tenant blocks are only checked for shape here; their content is
judged by `scheduler_core.validation` against the base the workload names
(`scheduler_core.whatif.proposal_errors`), so a proposed rule is refused for
exactly the reasons saving it would be. `read_spec` hands back the request as
far as it reads with its problems, so that judgement (and the store's tenant
ID rule) joins them in one answer rather than a second one after a fix.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler_core import fields as f
from scheduler_core.model import COMPONENTS
from scheduler_core.whatif import SpecError, SpecInvalid
from scheduler_core.whatif_model import START_FROM, START_FROM_LIVE, START_FROM_PROPOSAL, Knobs
from scheduler_core.whatif_scenarios import NO_DURATION, SCENARIO_NAMES

__all__ = [
    "DEFAULT_WINDOW_SECONDS",
    "MAX_DURATION_SECONDS",
    "MAX_QUERIERS",
    "WINDOW_RANGE",
    "SimulationSpec",
    "TenantIdCheck",
    "parse_spec",
    "read_spec",
]

DEFAULT_WINDOW_SECONDS = 900
WINDOW_RANGE = (60, 3600)  # the recorder keeps an hour
MAX_DURATION_SECONDS = 3600.0
MAX_QUERIERS = 1000
MAX_ARRIVAL_FACTOR = 100.0
MAX_SERVICE_FACTOR = 1000.0
_RUN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_TOP = ("workload", "proposed", "knobs", "seed", "run_id")
# What is wrong with a tenant ID, one message each ([] when nothing is).
TenantIdCheck = Callable[[str], list[str]]
_KNOBS = (
    "arrival_factor",
    "service_factor",
    "queriers",
    "duration_seconds",
    "slow_share",
    "start_from",
)


@dataclass(frozen=True, slots=True)
class SimulationSpec:
    """A valid request: what to simulate, what to change, how, and with which seed."""

    kind: str  # "recent" or "scenario" ("" in a body `read_spec` found no workload in)
    window_seconds: int | None = None
    scenario: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    # None: the tenant's override removed (`proposed.tenants.<id>: null`).
    tenants: Mapping[str, Mapping[str, Any] | None] = field(default_factory=dict)
    knobs: Knobs = field(default_factory=Knobs)
    seed: int = 1
    run_id: str | None = None


def _bounded(
    value: object,
    path: str,
    errs: f.Collector,
    low: float,
    high: float,
    *,
    integer: bool = False,
    open_low: bool = False,
) -> float | None:
    """A number in [low, high] ((low, high] when `open_low`), or None after saying why."""
    kind = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, int | float):
        errs.add(path, f"must be {kind}, got {f.shown(value)}")
        return None
    if integer and not isinstance(value, int):
        errs.add(path, f"must be {kind}, got {value!r}")
        return None
    if isinstance(value, float) and not math.isfinite(value):
        errs.add(path, f"must be a finite number, got {value!r}")
        return None
    too_low = value <= low if open_low else value < low
    if too_low or value > high:
        low_text, high_text = _bound_text(low, integer), _bound_text(high, integer)
        lower = f"> {low_text}" if open_low else f">= {low_text}"
        errs.add(path, f"must be {lower} and <= {high_text}, got {_number_text(value)}")
        return None
    return float(value)


def _number_text(value: float) -> str:
    """The number as refused; a huge integer (valid JSON) by its size, not 400 digits."""
    if isinstance(value, int) and value.bit_length() > 128:
        return "an integer of more than 38 digits"
    return repr(value)


def _bound_text(bound: float, integer: bool) -> str:
    # An integer bound in full: `:g` showed the seed's 2**63 - 1 as 9.22337e+18.
    return str(int(bound)) if integer else f"{bound:g}"


def _workload(raw: object, errs: f.Collector) -> tuple[str, int | None, str | None]:
    if raw is None:
        errs.add("workload", "required: {'kind': 'recent', ...} or {'kind': 'scenario', ...}")
        return "", None, None
    body = f.mapping(raw, "workload", errs)
    if body is None:
        return "", None, None
    kind = body.get("kind")
    if kind == "recent":
        f.unknown(body, ("kind", "window_seconds"), "workload", errs)
        window = body.get("window_seconds", DEFAULT_WINDOW_SECONDS)
        seconds = _bounded(window, "workload.window_seconds", errs, *WINDOW_RANGE, integer=True)
        return "recent", int(seconds) if seconds is not None else None, None
    if kind == "scenario":
        f.unknown(body, ("kind", "name"), "workload", errs)
        name = body.get("name")
        if name not in SCENARIO_NAMES:
            errs.add("workload.name", f"must be one of {', '.join(SCENARIO_NAMES)}, got {name!r}")
            return "scenario", None, None
        return "scenario", None, str(name)
    errs.add("workload.kind", f"must be recent or scenario, got {kind!r}")
    return "", None, None


def _proposed(
    raw: object, errs: f.Collector, tenant_id_problems: TenantIdCheck, found: list[SpecError]
) -> tuple[Mapping[str, Any], dict[str, Mapping[str, Any] | None]]:
    body = f.mapping(raw, "proposed", errs)
    if body is None:
        return {}, {}
    f.unknown(body, ("settings", "tenants"), "proposed", errs)
    settings = f.mapping(body.get("settings"), "proposed.settings", errs) or {}
    tenants_raw = f.mapping(body.get("tenants"), "proposed.tenants", errs) or {}
    tenants: dict[str, Mapping[str, Any] | None] = {}
    for key, block in tenants_raw.items():
        tenant_id = str(key)
        # A tenant ID may hold dots, so its path is kept as parts, not joined.
        where = ("proposed", "tenants", tenant_id)
        found += [SpecError(where, "", message) for message in tenant_id_problems(tenant_id)]
        if block is not None and not isinstance(block, Mapping):
            message = f"must be a tenant block (a mapping) or null, got {f.shown(block)}"
            found.append(SpecError(where, "", message))
            continue
        # Kept under a bad ID too, so its block is judged in the same answer.
        # null is the tenant's override removed, as in a JSON merge patch of
        # the overrides: it runs with the defaults, as a deleted tenant does.
        tenants[tenant_id] = block
    return settings, tenants


def _service_factor(raw: object, errs: f.Collector) -> dict[str, float]:
    path = "knobs.service_factor"
    body = f.mapping(raw, path, errs)
    if body is None:
        return {}
    out: dict[str, float] = {}
    for component, factor in body.items():
        where = f"{path}.{component}"
        if component not in COMPONENTS:
            errs.add(where, f"unknown component; one of {', '.join(COMPONENTS)}")
            continue
        value = _bounded(factor, where, errs, 0.0, MAX_SERVICE_FACTOR, open_low=True)
        if value is not None:
            out[str(component)] = value
    return out


def _knobs(raw: object, kind: str, scenario: str | None, errs: f.Collector) -> Knobs:
    body = f.mapping(raw, "knobs", errs)
    if body is None:
        return Knobs()
    f.unknown(body, _KNOBS, "knobs", errs)

    def optional(key: str, low: float, high: float, **how: bool) -> float | None:
        value = body.get(key)
        return None if value is None else _bounded(value, f"knobs.{key}", errs, low, high, **how)

    arrival = optional("arrival_factor", 0.0, MAX_ARRIVAL_FACTOR, open_low=True)
    queriers = optional("queriers", 1, MAX_QUERIERS, integer=True)
    duration = optional("duration_seconds", 0.0, MAX_DURATION_SECONDS, open_low=True)
    slow_share = optional("slow_share", 0.0, 1.0)
    if body.get("slow_share") is not None and scenario != "mimir-slow-consumer":
        errs.add("knobs.slow_share", "applies only to the mimir-slow-consumer scenario")
    if body.get("duration_seconds") is not None and scenario == "mimir-slow-consumer":
        # Every request arrives at t=0: there is no span to lengthen or cut,
        # and a duration taken and ignored would read as one the run had.
        errs.add("knobs.duration_seconds", NO_DURATION)
    return Knobs(
        arrival_factor=1.0 if arrival is None else arrival,
        service_factor=_service_factor(body.get("service_factor"), errs),
        queriers=None if queriers is None else int(queriers),
        duration_seconds=duration,
        slow_share=slow_share,
        start_from=_start_from(body.get("start_from"), kind, errs),
    )


def _start_from(raw: object, kind: str, errs: f.Collector) -> str:
    """`knobs.start_from`: which backlog a proposal's window starts with (null: the default).

    "live" (apply now) means the warm-up queued under the live config, so it
    needs recorded traffic: a scenario starts from an empty queue under its
    own config, with no live backlog to apply a proposal to.
    """
    path = "knobs.start_from"
    if raw is None:
        return START_FROM_PROPOSAL
    if raw not in START_FROM:
        errs.add(path, f"must be one of {', '.join(START_FROM)}, got {f.shown(raw)}")
        return START_FROM_PROPOSAL
    if raw == START_FROM_LIVE and kind == "scenario":
        errs.add(
            path,
            "live applies only to recent traffic: a scenario has no warm-up queued under a "
            "live config, so its proposal always starts from its own (empty) queue",
        )
        return START_FROM_PROPOSAL
    return str(raw)


def read_spec(
    raw: object, tenant_id_problems: TenantIdCheck = lambda _: []
) -> tuple[SimulationSpec, list[SpecError]]:
    """The request as far as it reads, and every problem with its shape.

    A part with a problem reads as its default (an unknown workload as kind
    ""), so a caller can go on to judge the rest: the proposal against its
    base (`whatif.proposal_errors`) and answer every error at once.
    `tenant_id_problems` says what is wrong with a proposed tenant's ID (the
    store's rule, which lives outside `scheduler_core`).
    """
    errs = f.Collector()
    body = f.mapping(raw, "", errs)
    if body is None:
        return SimulationSpec(kind=""), [SpecError((), e.path, e.message) for e in errs.errors]
    f.unknown(body, _TOP, "", errs)
    kind, window, scenario = _workload(body.get("workload"), errs)
    tenant_errors: list[SpecError] = []
    settings, tenants = _proposed(body.get("proposed"), errs, tenant_id_problems, tenant_errors)
    knobs = _knobs(body.get("knobs"), kind, scenario, errs)
    seed_raw = body.get("seed", 1)
    seed = _bounded(seed_raw, "seed", errs, 0, 2**63 - 1, integer=True)
    run_id = body.get("run_id")
    if run_id is not None and (not isinstance(run_id, str) or not _RUN_ID.fullmatch(run_id)):
        errs.add("run_id", "must be 1 to 64 letters, digits, '-' or '_'")
        run_id = None
    spec = SimulationSpec(
        kind=kind,
        window_seconds=window,
        scenario=scenario,
        settings=settings,
        tenants=tenants,
        knobs=knobs,
        seed=int(seed_raw) if seed is not None else 1,
        run_id=run_id,
    )
    return spec, [SpecError((), e.path, e.message) for e in errs.errors] + tenant_errors


def parse_spec(raw: object) -> SimulationSpec:
    """The checked request; raises `SpecInvalid` listing every problem `read_spec` finds."""
    spec, found = read_spec(raw)
    if found:
        raise SpecInvalid(found)
    return spec
