"""Dry runs of a draft config over recent traffic, run off the scheduler's loop.

The sample is read on the loop (a copy of plain rows, `api.wire.rule_reports`);
the matching itself (`scheduler_core.dry_run`) runs in the niced import worker
process (`api.rest.offload`) whenever imports do, so a dry run over 1,000
tenants x 1,000 requests holds neither the loop nor this process's GIL for
long. Reports carry the reservations before and after, computed with the
queriers this replica knows now. Nothing here writes anything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from django.conf import settings

from api.rest import offload
from api.wire.queue_rows import serving_body
from scheduler_core.dry_run import replay_many, reserved_by_priority, serving_of
from scheduler_core.errors import ConfigInvalid
from scheduler_core.model import TenantLimits
from scheduler_core.validation import tenant_limits_from_dict

__all__ = ["TrafficJob", "offloaded", "tenant_reports", "traffic_report"]

T = TypeVar("T")
# (tenant, sampled rows, saved block, draft block)
TrafficJob = tuple[str, Sequence[Sequence[Any]], dict[str, Any], dict[str, Any]]


def _limits(raw: Mapping[str, Any]) -> TenantLimits:
    try:
        return tenant_limits_from_dict(raw)
    except ConfigInvalid:
        return TenantLimits()


def tenant_reports(
    jobs: Sequence[TrafficJob], queriers: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """One report per tenant: the replay plus who would serve it, before and after.

    `reservations` by priority, and `serving` as the drill-down says it (the
    shard as well: a draft may change its size).
    """
    reports = replay_many(jobs)
    for tenant_id, _, before, after in jobs:
        now = serving_of(tenant_id, _limits(before), queriers)
        then = serving_of(tenant_id, _limits(after), queriers)
        reports[tenant_id]["reservations"] = {
            "before": reserved_by_priority(now),
            "after": reserved_by_priority(then),
        }
        reports[tenant_id]["serving"] = {"before": serving_body(now), "after": serving_body(then)}
    return reports


def traffic_report(
    overrides: Any,
    traffic: Sequence[tuple[str, Sequence[Sequence[Any]]]],
    queriers: Sequence[str],
) -> dict[str, dict[str, Any]]:
    """A runtime-config import's traffic part: each sampled tenant, saved vs file.

    Runs where the import runs (the worker); a tenant the file leaves out
    would be deleted, so it is replayed against the defaults.
    """
    from api.store import selectors

    saved = selectors.runtime_config_export()
    wanted = overrides if isinstance(overrides, Mapping) else {}
    jobs: list[TrafficJob] = []
    for tenant_id, rows in traffic:
        after = wanted.get(tenant_id)
        jobs.append(
            (
                tenant_id,
                rows,
                dict(saved.get(tenant_id) or {}),
                dict(after) if isinstance(after, Mapping) else {},
            )
        )
    return tenant_reports(jobs, queriers)


def offloaded(function: Callable[..., T], *args: Any) -> T:
    """`function(*args)` in the import worker process when imports use it, else here.

    The function and its arguments must be plain (picklable) values.
    """
    if getattr(settings, "CONFIG_IMPORT_IN_WORKER_PROCESS", True):
        return offload.shared_worker().call(function, *args)
    return function(*args)
