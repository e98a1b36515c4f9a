"""Dry runs of a draft config over recent traffic, run off the scheduler's loop.

The sample is read on the loop (a copy of plain rows, `api.wire.rule_reports`);
the matching itself (`scheduler_core.dry_run`) runs in a niced worker process
like the import's (`api.rest.offload`) whenever imports use one, so a dry run over 1,000
tenants x 1,000 requests holds neither the loop nor this process's GIL for
long. Reports carry the reservations before and after, of the tenant's
queue and of each federated ID's (its own queue), computed with the queriers
this replica knows now. Nothing here writes anything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from django.conf import settings

from api.rest import offload
from api.wire.queue_rows import serving_body
from scheduler_core.dry_run import limits_of, replay, reserved_by_priority, serving_of
from scheduler_core.model import TenantLimits
from scheduler_core.snapshot import TenantServing

__all__ = ["TrafficJob", "offloaded", "tenant_reports", "traffic_report"]

T = TypeVar("T")
# (tenant, sampled rows, saved block, draft block[, federated]): a block is a
# tenant block or, for a federated ID, its tenants' blocks in ID order
# (`scheduler_core.dry_run.limits_of`); `federated` the (org ID, rows, saved,
# draft) of the federated IDs naming the tenant, their blocks lists.
TrafficJob = tuple[Any, ...]


def tenant_reports(
    jobs: Sequence[TrafficJob], queriers: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """One report per tenant: the replay plus who would serve it, before and after.

    `reservations` by priority, and `serving` as the drill-down says it (the
    shard as well: a draft may change its size). Each `federated` row gets
    the `serving` of its own queue: a federated ID queues apart, under its
    tenants' combined limits. Every block's limits are built once, here, and
    both judge the replay and size the serving, so the two cannot disagree.
    """
    reports = {}
    for tenant_id, rows, saved, draft, *more in jobs:
        before, after = limits_of(saved), limits_of(draft)
        federated = [
            (org_id, org_rows, limits_of(org_saved), limits_of(org_draft))
            for org_id, org_rows, org_saved, org_draft in (more[0] if more else ())
        ]
        report = replay(rows, before, after, federated)
        now, then = _served(tenant_id, before, after, queriers)
        report["reservations"] = {
            "before": reserved_by_priority(now),
            "after": reserved_by_priority(then),
        }
        report["serving"] = _serving(now, then)
        combined = {
            org_id: (org_before, org_after) for org_id, _, org_before, org_after in federated
        }
        for row in report["federated"]:
            row["serving"] = _serving(*_served(row["org_id"], *combined[row["org_id"]], queriers))
        reports[tenant_id] = report
    return reports


def _served(
    queue_id: str, before: TenantLimits, after: TenantLimits, queriers: Sequence[str]
) -> tuple[TenantServing, TenantServing]:
    """Who would serve the queue `queue_id` (a tenant or a federated ID) now and with the draft."""
    return serving_of(queue_id, before, queriers), serving_of(queue_id, after, queriers)


def _serving(now: TenantServing, then: TenantServing) -> dict[str, Any]:
    return {"before": serving_body(now), "after": serving_body(then)}


def traffic_report(
    overrides: Any,
    traffic: Sequence[tuple[str, Sequence[Sequence[Any]]]],
    queriers: Sequence[str],
) -> dict[str, dict[str, Any]]:
    """A runtime-config import's traffic part: each sampled tenant, saved vs file.

    Runs where the import runs (the worker); a tenant the file leaves out
    would be deleted, so it is replayed against the defaults. A federated
    ID's traffic (`a|b`, sampled under that ID) is replayed under its
    tenants' combined limits, saved vs file, as the doors would judge it.
    """
    from api.store import selectors

    saved = selectors.runtime_config_export()
    wanted = overrides if isinstance(overrides, Mapping) else {}

    def blocks(source: Mapping[str, Any], org_id: str) -> Any:
        found = [source.get(tenant) for tenant in org_id.split("|")]
        plain = [dict(block) if isinstance(block, Mapping) else {} for block in found]
        return plain if "|" in org_id else plain[0]

    jobs: list[TrafficJob] = [
        (org_id, rows, blocks(saved, org_id), blocks(wanted, org_id)) for org_id, rows in traffic
    ]
    return tenant_reports(jobs, queriers)


def offloaded(function: Callable[..., T], *args: Any) -> T:
    """`function(*args)` in a worker process of its own when imports use one, else here.

    Not the import's worker: dry runs, which viewers may run, never queue
    ahead of an editor's import. The function and its arguments must be
    plain (picklable) values.
    """
    if getattr(settings, "CONFIG_IMPORT_IN_WORKER_PROCESS", True):
        return offload.shared_worker("dry-run").call(function, *args)
    return function(*args)
