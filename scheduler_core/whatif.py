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

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler_core.actor_path import actor_path_from_headers
from scheduler_core.classify import classify
from scheduler_core.federation import federated_tenants_error
from scheduler_core.model import QueueConfig, TenantLimits
from scheduler_core.rejection import judge
from scheduler_core.validation import (
    queue_config_from_dict,
    tenant_limits_from_dict,
    validate_queue_settings,
    validate_tenant_config,
)
from scheduler_core.whatif_apply import ConfigChange
from scheduler_core.whatif_engine import US, EngineInput, run_engine
from scheduler_core.whatif_model import START_FROM_LIVE, ConfigSet, Kind, Workload, WorkloadError
from scheduler_core.whatif_summary import BY_RULE, TOO_MANY_TENANTS, WORST_TENANTS, summarize
from scheduler_core.whatif_verdicts import verdicts

__all__ = [
    "BY_RULE",
    "TOO_MANY_TENANTS",
    "WORST_TENANTS",
    "ConfigSet",
    "SpecError",
    "SpecInvalid",
    "WorkloadInvalid",
    "check_proposed_tenants",
    "merge_proposed",
    "proposal_errors",
    "run_whatif",
    "summarize",
    "unknown_tenants",
    "verdicts",
    "workload_errors",
]

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


class WorkloadInvalid(WorkloadError):
    """Several problems found once the workload was read, every one in `errors`.

    A `WorkloadError` (its `prefix`, `path` and message are the first's), so
    a caller that knows only those still names one; `workload_errors` gives
    them all, so the 400 lists every error at once.
    """

    def __init__(self, errors: Sequence[SpecError]) -> None:
        first = errors[0]
        super().__init__(first.path, first.message, prefix=first.prefix)
        self.errors = list(errors)


def workload_errors(exc: WorkloadError) -> list[SpecError]:
    """Every error a `WorkloadError` carries: a `WorkloadInvalid`'s all, else its one."""
    if isinstance(exc, WorkloadInvalid):
        return list(exc.errors)
    return [SpecError(tuple(exc.prefix), exc.path, str(exc))]


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
    workload: Workload, configs: ConfigSet, seed: int, warmup: ConfigSet | None = None
) -> tuple[EngineInput, Counter[tuple[str, str]]]:
    """The engine's input, and the measured arrivals the doors refused, by (why, tenant).

    A refused request never reaches the queue (the doors answer it 422 for
    a rule, 400 for too many tenants), so it is left out of the arrivals.
    `warmup` ("apply now"): the config the warm-up is admitted and queued
    under; `configs` is applied at the window's start and admits from then.
    """
    kinds = workload.kinds
    classes = [_classified(kind, configs) for kind in kinds]
    # Each kind's actor path as admission reads it under this config's header.
    header = configs.config.actor_path_header
    paths = [actor_path_from_headers(kind.headers, header) for kind in kinds]
    arrival_kinds: Sequence[int] = workload.kind_of
    if warmup is not None:
        # Kind k as the warm-up's config admits it is k + n: each arrival
        # takes the reading of the config in force when it arrives.
        classes += [_classified(kind, warmup) for kind in kinds]
        header = warmup.config.actor_path_header
        paths += [actor_path_from_headers(kind.headers, header) for kind in kinds]
        start, n, times = workload.measure_from_us, len(kinds), workload.times
        arrival_kinds = [k if times[i] >= start else k + n for i, k in enumerate(arrival_kinds)]
        kinds = kinds + kinds
    tenant_of = [kind.tenant_id for kind in kinds]
    refused: Counter[tuple[str, str]] = Counter()
    picked: Sequence[int] = range(len(workload.times))
    if any(refusal for _, _, refusal in classes):
        kind_of, start = arrival_kinds, workload.measure_from_us
        kept = []
        for i, at in enumerate(workload.times):
            refusal = classes[kind_of[i]][2]
            if refusal:
                if at >= start:
                    refused[refusal, tenant_of[kind_of[i]]] += 1
            else:
                kept.append(i)
        picked = kept
    kind_of = [arrival_kinds[i] for i in picked]
    components = [classes[k][0] for k in kind_of]
    quantiles = [workload.quantiles[i] for i in picked]
    seconds = [workload.seconds[i] for i in picked]
    span = workload.duration_seconds or 0.0
    first = configs if warmup is None else warmup
    run = EngineInput(
        config=first.config,
        limits=first.limits,
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
        window_config=None if warmup is None else ConfigChange(configs.config, configs.limits),
    )
    return run, refused


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
    `WorkloadInvalid` with an error at `proposed.tenants.<id>` for each, as
    a scenario's request lists them (its `prefix` and message the first's).
    """
    sent = {part for kind in workload.kinds for part in kind.tenant_id.split("|")}
    here = "configured or sent traffic in this window"
    found = unknown_tenants(set(proposed.limits) | set(named), sent | set(live.limits), here)
    if found:
        raise WorkloadInvalid(found)


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
    With `workload.start_from` live ("apply now") the proposal's run admits
    and queues the warm-up under `live` and is applied at the window's
    start; without a warm-up there is nothing queued to apply it to.
    """
    if workload.description.get("kind") == "recent":
        check_proposed_tenants(workload, live, proposed, named_tenants)
    apply_now = workload.start_from == START_FROM_LIVE and workload.measure_from_us > 0
    results: list[dict[str, Any]] = []
    for part, configs in enumerate((live, proposed)):

        def step(fraction: float, part: int = part) -> None:
            if progress is not None:
                progress((part + fraction) / 2)

        warmup = live if part and apply_now else None
        engine_input, refused = _engine_input(workload, configs, seed, warmup)
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
