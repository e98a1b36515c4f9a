"""What if: one workload under the live config and under a proposed one, side by side.

The simulator is the scheduler: each config is the pair of values the
runtime itself runs (`QueueConfig` and per-tenant `TenantLimits`, built by
`scheduler_core.validation` from the same raw dicts the store holds); each
arrival's component and priority come from `scheduler_core.classify` and
`QueryPriority.priority_for` under that config, its actor path from its
headers under that config's `actor_path_header` (`actor_path_from_headers`,
as admission reads it; the queue cuts it to `max_queue_hierarchy_levels`);
and the queue is the real `RequestQueue`, driven by
`scheduler_core.whatif_engine` on a virtual clock in the runtime's
dispatch order. Nothing here decides who goes first.

`run_whatif` answers the REST contract's body: `live` and `proposed`
results (waits by priority, by component, the five worst tenants, 429s,
refusals by a rule or by `max_federated_tenants`, utilisation,
reserved-idle time), the `workload` simulated and one verdict line per
priority. It is deterministic for its inputs and seed, and bounded:
`MAX_REQUESTS` arrivals per config (checked before running) and a wall-clock
deadline the caller gives (`SimulationTimeLimit` past it).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler_core.actor_path import actor_path_from_headers
from scheduler_core.classify import classify
from scheduler_core.federation import federated_tenants_error
from scheduler_core.model import COMPONENTS, QueueConfig, TenantLimits
from scheduler_core.rejection import judge
from scheduler_core.validation import (
    queue_config_from_dict,
    tenant_limits_from_dict,
    validate_queue_settings,
    validate_tenant_config,
)
from scheduler_core.whatif_engine import US, EngineInput, EngineResult, run_engine
from scheduler_core.whatif_model import ConfigSet, Kind, Workload, WorkloadError
from scheduler_core.whatif_verdicts import verdicts

__all__ = [
    "ConfigSet",
    "SpecError",
    "SpecInvalid",
    "check_proposed_tenants",
    "merge_proposed",
    "proposal_errors",
    "run_whatif",
    "summarize",
    "unknown_tenants",
    "verdicts",
]

WORST_TENANTS = 5
_SERIES_POINTS = 200


@dataclass(frozen=True, slots=True)
class SpecError:
    """One problem: a path prefix (parts), a validator path under it, a message."""

    prefix: tuple[str, ...]
    path: str
    message: str


class SpecInvalid(Exception):
    """The simulation request is invalid; nothing was run."""

    def __init__(self, errors: list[SpecError]) -> None:
        super().__init__(
            "; ".join(".".join((*e.prefix, e.path)) + f": {e.message}" for e in errors)
        )
        self.errors = errors


def proposal_errors(
    base_config: QueueConfig | None,
    settings: Mapping[str, Any],
    tenants: Mapping[str, Mapping[str, Any] | None],
) -> list[SpecError]:
    """Every validator error of a proposal, under `proposed.settings` or `proposed.tenants.<id>`.

    `base_config` is the config the settings change; None when the request
    named no valid workload, so none is known: the settings are then judged
    alone (the two windows against each other only when both are given),
    which still names every field wrong whatever the base.
    """
    errors = [
        SpecError(("proposed", "settings"), e.path, e.message)
        for e in validate_queue_settings(settings, base_config)
    ]
    for tenant_id, body in tenants.items():
        if body is not None:
            prefix = ("proposed", "tenants", tenant_id)
            errors += [SpecError(prefix, e.path, e.message) for e in validate_tenant_config(body)]
    return errors


def merge_proposed(
    base: ConfigSet,
    settings: Mapping[str, Any],
    tenants: Mapping[str, Mapping[str, Any] | None],
) -> ConfigSet:
    """`base` with the named settings changed and the named tenants' blocks replaced.

    A tenant body is a whole block, as `PUT tenants/<id>` takes it; None
    removes that tenant's override (it runs with the defaults, as a deleted
    tenant does). Raises `SpecInvalid` with every `proposal_errors` error.
    """
    errors = proposal_errors(base.config, settings, tenants)
    if errors:
        raise SpecInvalid(errors)
    limits = dict(base.limits)
    for tenant_id, body in tenants.items():
        if body is None:
            limits.pop(tenant_id, None)
        else:
            limits[tenant_id] = tenant_limits_from_dict(body)
    return ConfigSet(queue_config_from_dict(settings, base.config), limits)


# Why the doors refuse an arrival before the queue, as `_classified` says.
BY_RULE = "by_rule"
TOO_MANY_TENANTS = "too_many_tenants"


def _classified(kind: Kind, configs: ConfigSet) -> tuple[str, int, str | None]:
    """(component, priority, refusal) as the frontend doors decide.

    The doors' own steps: a federated org ID over `max_federated_tenants`
    is refused first (`TOO_MANY_TENANTS`); then classify (unless the
    frontend named the component and no rule needs the parse), then
    `rejection.judge` (rejection rules first, then priorities, as Cortex's
    `rejectQueryOrSetPriority`; `BY_RULE`).
    """
    config = configs.config
    if federated_tenants_error(kind.tenant_id, config.max_federated_tenants) is not None:
        return kind.hint or "", 0, TOO_MANY_TENANTS
    limits = configs.limits.get(kind.tenant_id, _NO_LIMITS)
    if (
        kind.hint is not None
        and not limits.query_priority.enabled
        and not limits.query_rejection.enabled
    ):
        return kind.hint, 0, None
    found = classify(
        query=kind.query,
        api_type=kind.api_type,
        start=kind.start,
        end=kind.end,
        step=kind.step,
        headers=kind.headers,
        now=kind.now,
        query_ingesters_within=config.query_ingesters_within,
        query_store_after=config.query_store_after,
    )
    verdict = judge(limits, found.info, kind.now)
    return kind.hint or found.component, verdict.priority, BY_RULE if verdict.rejected else None


_NO_LIMITS = TenantLimits()


def _engine_input(
    workload: Workload, configs: ConfigSet, seed: int
) -> tuple[EngineInput, Counter[tuple[str, str]]]:
    """The engine's input, and the measured arrivals the doors refused, by (why, tenant).

    A refused request never reaches the queue (the doors answer it 422 for
    a rule, 400 for too many tenants), so it is left out of the arrivals.
    """
    classes = [_classified(kind, configs) for kind in workload.kinds]
    tenant_of = [kind.tenant_id for kind in workload.kinds]
    refused: Counter[tuple[str, str]] = Counter()
    picked: Sequence[int] = range(len(workload.times))
    if any(refusal for _, _, refusal in classes):
        kind_of, start = workload.kind_of, workload.measure_from_us
        kept = []
        for i, at in enumerate(workload.times):
            refusal = classes[kind_of[i]][2]
            if refusal:
                if at >= start:
                    refused[refusal, tenant_of[kind_of[i]]] += 1
            else:
                kept.append(i)
        picked = kept
    kind_of = [workload.kind_of[i] for i in picked]
    components = [classes[k][0] for k in kind_of]
    # Each kind's actor path as admission reads it under this config's header.
    header = configs.config.actor_path_header
    paths = [actor_path_from_headers(kind.headers, header) for kind in workload.kinds]
    quantiles = [workload.quantiles[i] for i in picked]
    seconds = [workload.seconds[i] for i in picked]
    span = workload.duration_seconds or 0.0
    run = EngineInput(
        config=configs.config,
        limits=configs.limits,
        fleet=workload.fleet,
        times=[workload.times[i] for i in picked],
        tenants=[tenant_of[k] for k in kind_of],
        components=components,
        priorities=[classes[k][1] for k in kind_of],
        services=list(map(workload.service, components, quantiles, seconds)),
        actor_paths=[paths[k] for k in kind_of] if any(paths) else (),
        worker_order_seed=seed,
        start_after_arrivals_at_zero=workload.start_after_arrivals_at_zero,
        measure_from_us=workload.measure_from_us,
        measure_until_us=workload.measure_until_us,
        sample_every_us=max(US, round(span * US / _SERIES_POINTS)) if span else US // 100,
    )
    return run, refused


def _stats(waits: list[float]) -> dict[str, float | int]:
    """{mean, p50, p99, max, count} in seconds; nearest-rank percentiles."""
    if not waits:
        return {"mean": 0.0, "p50": 0.0, "p99": 0.0, "max": 0.0, "count": 0}
    ordered = sorted(waits)
    n = len(ordered)

    def rank(q: float) -> float:
        return round(ordered[max(1, math.ceil(q * n)) - 1], 6)

    return {
        "mean": round(sum(ordered) / n, 6),
        "p50": rank(0.5),
        "p99": rank(0.99),
        "max": round(ordered[-1], 6),
        "count": n,
    }


def _waiting_at_end(run: EngineResult) -> dict[str, Any] | None:
    """A window's requests still queued at its end, by priority; None for a scenario."""
    waiting = run.waiting_at_end
    if waiting is None:
        return None
    return {
        "total": sum(waiting.values()),
        "by_priority": {str(p): waiting[p] for p in sorted(waiting, reverse=True)},
    }


def summarize(
    run: EngineResult, duration: float | None, refused: Counter[tuple[str, str]] | None = None
) -> dict[str, Any]:
    """One config's result in the REST contract's shape (plus a few extras).

    `refused`: arrivals the doors refused (never queued), by (`BY_RULE` or
    `TOO_MANY_TENANTS`, tenant).
    """
    refused = refused or Counter()
    by_tenant = Counter(run.rejected_by_tenant)
    for (_, tenant), count in refused.items():
        by_tenant[tenant] += count
    span = max(run.makespan, duration or 0.0)
    ranked = sorted(
        ((_stats(w), t) for t, w in run.waits_by_tenant.items()),
        key=lambda pair: (-pair[0]["p99"], -pair[0]["mean"], pair[1]),
    )
    tenants = [{"tenant": t, **row} for row, t in ranked[:WORST_TENANTS]]
    capacity = run.workers * span
    too_many = sum(run.rejected_by_tenant.values())
    by_rule = sum(n for (why, _), n in refused.items() if why == BY_RULE)
    too_many_tenants = sum(n for (why, _), n in refused.items() if why == TOO_MANY_TENANTS)
    rejected = too_many + by_rule + too_many_tenants
    return {
        "by_priority": {
            str(p): _stats(run.waits_by_priority[p])
            for p in sorted(run.waits_by_priority, reverse=True)
        },
        "by_component": {
            c: _stats(run.waits_by_component[c]) for c in COMPONENTS if c in run.waits_by_component
        },
        "worst_tenants": tenants,
        "rejected": {
            "total": rejected,
            "too_many_outstanding": too_many,
            "by_rule": by_rule,
            "too_many_tenants": too_many_tenants,
            "by_tenant": dict(sorted(by_tenant.items())),
        },
        "utilisation": {
            c: round(busy / capacity, 4) if capacity else 0.0
            for c, busy in run.busy_by_component.items()
        },
        "reserved_idle_seconds": round(run.reserved_idle_seconds, 6),
        "reserved_queriers": list(run.reserved_queriers),
        "requests": {
            "offered": run.enqueued + rejected,
            "enqueued": run.enqueued,
            "completed": run.completed,
            "left_queued": run.left_queued,
        },
        "waiting_at_window_end": _waiting_at_end(run),
        "makespan_seconds": round(run.makespan, 6),
        "series": {
            "t": [round(t, 3) for t, _ in run.queue_length],
            "queue_length": [n for _, n in run.queue_length],
        },
    }


Progress = Callable[[float], None]
_NAMED_TENANTS = 10  # tenants listed in an unknown tenant's error


def unknown_tenants(named: Iterable[str], known: Collection[str], here: str) -> list[SpecError]:
    """An error at `proposed.tenants.<id>` for each named tenant not in `known`.

    Its block (or its removal) could change nothing, so both columns would
    agree and the operator would read "no effect" into what is most likely a
    mistyped ID (`team-bb`). `here` says where the tenants were looked for.
    """
    unknown = sorted(set(named).difference(known))
    if not unknown:
        return []
    listed = sorted(known)
    shown = ", ".join(listed[:_NAMED_TENANTS]) + (", ..." if len(listed) > _NAMED_TENANTS else "")
    return [
        SpecError(
            ("proposed", "tenants", tenant_id),
            "",
            f"no tenant {tenant_id!r} is {here}, so proposing it changes nothing "
            f"(a mistyped ID?); tenants here: {shown or 'none'}",
        )
        for tenant_id in unknown
    ]


def check_proposed_tenants(
    workload: Workload, live: ConfigSet, proposed: ConfigSet, named: Collection[str] = ()
) -> None:
    """Refuse a proposed tenant that is neither configured nor in the recorded traffic.

    (`unknown_tenants`.) A part of a federated ID (`a` of `a|b`) is in the
    traffic. `named` are the tenants the request names: one whose override
    it removes (null) leaves no trace in `proposed` to find it by. Raises
    `WorkloadError` at `proposed.tenants.<id>` for the first.
    """
    sent = {part for kind in workload.kinds for part in kind.tenant_id.split("|")}
    here = "configured or sent traffic in this window"
    found = unknown_tenants(set(proposed.limits) | set(named), sent | set(live.limits), here)
    if found:
        raise WorkloadError("", found[0].message, prefix=found[0].prefix)


def run_whatif(
    workload: Workload,
    live: ConfigSet,
    proposed: ConfigSet,
    *,
    seed: int,
    deadline: float | None = None,
    should_stop: Callable[[], bool] | None = None,
    progress: Progress | None = None,
    named_tenants: Collection[str] = (),
) -> dict[str, Any]:
    """Both configs on the same arrivals and draws; the contract's response body.

    For recorded traffic a proposed tenant must be one it knows
    (`check_proposed_tenants`, `named_tenants` the request's own); a
    scenario's are its config's few, known before it runs, so the caller
    checks those with `unknown_tenants` together with the rest of the request.
    """
    if workload.description.get("kind") == "recent":
        check_proposed_tenants(workload, live, proposed, named_tenants)
    results: list[dict[str, Any]] = []
    for part, configs in enumerate((live, proposed)):

        def step(fraction: float, part: int = part) -> None:
            if progress is not None:
                progress((part + fraction) / 2)

        engine_input, refused = _engine_input(workload, configs, seed)
        run = run_engine(engine_input, deadline=deadline, should_stop=should_stop, progress=step)
        results.append(summarize(run, workload.duration_seconds, refused))
    if progress is not None:
        progress(1.0)
    return {
        "live": results[0],
        "proposed": results[1],
        "workload": {**workload.description, "seed": seed},
        "verdicts": verdicts(results[0], results[1]),
    }
