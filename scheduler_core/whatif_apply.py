"""A config applied to a running queue mid-replay, as an operator's save reaches the live one.

The what-if's "apply now" (`knobs.start_from: "live"`) replays the warm-up
under the live config and applies the proposal at the window's start. A
save reaches the live scheduler through `RequestQueue.set_config`,
`set_tenant_limits` and `remove_tenant_limits` (the runtime's setters pass
straight to them; `api.wire.config_apply.ConfigApplier` decides which to
call): the settings when they differ, then each tenant whose block went,
then each tenant whose block changed, in one `limits_batch`.
`apply_change` calls the same three in the same order, so the replay's
queue changes exactly as the live one would. None of them touches a queued
request: each keeps the priority (and the leaf and actor sub-queue)
admission gave it under the old config, and only arrivals from then on are
classified by the new one (the caller's job: `scheduler_core.whatif`
classifies each arrival by the config in force when it arrives).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from scheduler_core.model import QueueConfig, TenantLimits
from scheduler_core.queue import RequestQueue

__all__ = ["ConfigChange", "apply_change"]


class ConfigChange(NamedTuple):
    """The config a replay switches to: settings and every configured tenant's limits."""

    config: QueueConfig
    limits: Mapping[str, TenantLimits]


def apply_change(
    queue: RequestQueue, applied: Mapping[str, TenantLimits], change: ConfigChange
) -> None:
    """Put `change` on `queue`, whose tenants' limits were set from `applied`.

    Only what differs is set, as a live apply sets it: a tenant whose block
    is the same keeps its shard and reservations untouched.
    """
    if queue.config != change.config:
        queue.set_config(change.config)
    with queue.limits_batch():
        # Sorted: a seeded replay must not depend on the order a set iterates in.
        for tenant_id in sorted(applied.keys() - change.limits.keys()):
            queue.remove_tenant_limits(tenant_id)
        for tenant_id, limits in change.limits.items():
            if applied.get(tenant_id) != limits:
                queue.set_tenant_limits(tenant_id, limits)
