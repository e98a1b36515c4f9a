"""The operator's steps of a seeded chaos run (`tests.api.wire.chaos`).

What an operator does to a running scheduler while frontends and queriers
come and go: a tenant's limits change (`retune`), a held request or a
tenant's queued ones are cancelled as the drill-down and the REST API
cancel them (`operator_cancel`), the running layout flips or the actor
sub-queues' depth changes (`reconfigure`). Mixed into `ChaosRun`, whose
`runtime`, `rng` and `log` they use.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from api.wire.queue_requests import cancel_matching, cancel_one, operator_reason
from api.wire.queue_rows import RequestFilter
from scheduler_core.model import TenantLimits
from scheduler_core.validation import tenant_limits_from_dict

__all__ = ["RETUNES", "TENANTS", "OperatorSteps"]

TENANTS = ("t1", "t2", "t3")
# What a tenant's limits may change to mid-run (None: back to the defaults):
# a one-querier shard, a tight outstanding limit (429s), a reserved
# priority, rejection of a query (422s).
RETUNES: tuple[TenantLimits | None, ...] = (
    None,
    tenant_limits_from_dict({"max_queriers_per_tenant": 1}),
    tenant_limits_from_dict({"max_outstanding_requests_per_tenant": 3}),
    tenant_limits_from_dict(
        {
            "max_queriers_per_tenant": 2,
            "query_priority": {
                "enabled": True,
                "priorities": [
                    {"priority": 5, "reserved_queriers": 1, "query_attributes": [{"regex": "up"}]}
                ],
            },
        }
    ),
    tenant_limits_from_dict(
        {"query_rejection": {"enabled": True, "query_attributes": [{"regex": ".*reject_me.*"}]}}
    ),
)


class OperatorSteps:
    runtime: Any
    rng: random.Random
    log: list[str]

    def retune(self) -> None:
        """A tenant's limits change while its requests are queued and running."""
        tenant, limits = self.rng.choice(TENANTS), self.rng.choice(RETUNES)
        if limits is None:
            self.runtime.remove_tenant_limits(tenant)
        else:
            self.runtime.set_tenant_limits(tenant, limits)
        self.log.append(f"{tenant}'s limits become {limits}")

    async def operator_cancel(self) -> None:
        """An operator cancels one held request, or every queued request of a tenant.

        Its frontend is told `failed`, which ends the request as any end does.
        """
        queue = self.runtime.queue
        held = [*queue.listing().queued(), *queue.in_flight_requests()]
        reason = operator_reason("chaos")
        if held and self.rng.random() < 0.6:
            request = self.rng.choice(held)
            cancel_one(self.runtime, request.id, reason, replica="", names={})
            self.log.append(f"an operator cancels {request.id}")
            return
        tenant = self.rng.choice(TENANTS)
        flt = RequestFilter(tenant=tenant)
        matched, _ = await cancel_matching(self.runtime, flt, reason, dry_run=False, names={})
        self.log.append(f"an operator cancels {tenant}'s {matched} queued")

    def reconfigure(self) -> None:
        """The running layout flips, or the actor levels change, with requests held."""
        config = self.runtime.config
        if self.rng.random() < 0.5:
            layout = "component-first" if config.layout == "tenant-first" else "tenant-first"
            self.runtime.set_config(dataclasses.replace(config, layout=layout))
            self.log.append(f"the layout becomes {layout}")
            return
        levels = self.rng.randrange(4)
        self.runtime.set_config(dataclasses.replace(config, max_queue_hierarchy_levels=levels))
        self.log.append(f"actor sub-queues become {levels} levels deep")
