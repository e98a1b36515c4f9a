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
from scheduler_core.dry_run import limits_of, replay_many, reserved_by_priority, serving_of

__all__ = ["TrafficJob", "offloaded", "tenant_reports", "traffic_report"]

T = TypeVar("T")
# (tenant, sampled rows, saved block, draft block[, federated]): a block is a
# tenant block or, for a federated ID, its tenants' blocks in ID order;
# `federated` the (org ID, rows, saved, draft) of the federated IDs naming
# the tenant (`scheduler_core.dry_run.replay_many`).
TrafficJob = tuple[Any, ...]


def tenant_reports(
    jobs: Sequence[TrafficJob], queriers: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """One report per tenant: the replay plus who would serve it, before and after.

    `reservations` by priority, and `serving` as the drill-down says it (the
    shard as well: a draft may change its size).
    """
    reports = replay_many(jobs)
    for tenant_id, _, before, after, *_federated in jobs:
        now = serving_of(tenant_id, limits_of(before), queriers)
        then = serving_of(tenant_id, limits_of(after), queriers)
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
    """`function(*args)` in the import worker process when imports use it, else here.

    The function and its arguments must be plain (picklable) values.
    """
    if getattr(settings, "CONFIG_IMPORT_IN_WORKER_PROCESS", True):
        return offload.shared_worker().call(function, *args)
    return function(*args)
