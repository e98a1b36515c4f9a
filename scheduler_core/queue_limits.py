"""`QueueLimits`: a `RequestQueue`'s tenant limits, set, read and removed.

A tenant's limits apply at once: its outstanding cap, whether its leaf
orders by priority, and its shuffle shard and reservations. A federated ID
(`a|b`) is never configured: its queue stores the combined limits of its
tenants while it is live (`federation.keep_org_limits`), and each edit of
one of those tenants re-derives them at once. Cortex and Mimir read them
again only at the ID's next request: until then a lowered shard or a new
reservation did not hold for work already queued under `a|b`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from scheduler_core.federation import keep_org_limits
from scheduler_core.model import QueryPriority, TenantLimits
from scheduler_core.queue_state import QueueState

__all__ = ["QueueLimits"]

_DEFAULT_LIMITS = TenantLimits()


class QueueLimits(QueueState):
    """The limits part of `RequestQueue`."""

    def set_tenant_limits(self, tenant_id: str, limits: TenantLimits) -> None:
        """Apply at once; queued work is kept even above a lowered limit.

        The live federated queues naming the tenant take their new combined
        limits at once too (or at the end of a `limits_batch`).
        """
        self._limits[tenant_id] = limits
        state = self._tenants.get(tenant_id)
        if state is None:
            state = self._new_state(tenant_id)
        state.cap = self._config.outstanding_limit(limits)
        state.priority_enabled = limits.query_priority.enabled
        self._assignment.set_tenant(
            tenant_id, limits.max_queriers, limits.query_priority, limits.max_query_capacity
        )
        self._rederive_federated(tenant_id)

    def tenant_limits(self, tenant_id: str) -> TenantLimits:
        """The tenant's limits, or the defaults when none were set."""
        return self._limits.get(tenant_id) or _DEFAULT_LIMITS

    def remove_tenant_limits(self, tenant_id: str) -> None:
        """Back to the defaults at once, as `set_tenant_limits` applies."""
        self._limits.pop(tenant_id, None)
        state = self._tenants.get(tenant_id)
        if state is not None:
            state.cap = self._config.max_outstanding_requests_per_tenant
            state.priority_enabled = False
            self._forget_idle(state)
        self._assignment.set_tenant(tenant_id, 0, QueryPriority())
        self._rederive_federated(tenant_id)

    @contextmanager
    def limits_batch(self) -> Iterator[None]:
        """Set many tenants' limits; each federated queue naming them re-derives once, at the end.

        A config apply sets every changed tenant in turn. Re-deriving an ID
        as each of its tenants changed read all of its tenants each time (an
        apply of N tenants against a live ID naming them all was N x N
        reads), and looking for the IDs naming each tenant walked every live
        ID once per tenant: at the end, each live ID is looked at once.
        """
        if self._deferred is not None:  # already in a batch: its end re-derives
            yield
            return
        changed: set[str] = set()
        self._deferred = changed
        try:
            yield
        finally:
            self._deferred = None
            if changed:
                self._rederive(changed)

    def _rederive_federated(self, tenant_id: str) -> None:
        """The live federated queues naming `tenant_id` take its limits now."""
        if "|" in tenant_id or not self._federated:
            return
        if self._deferred is not None:
            self._deferred.add(tenant_id)
        else:
            self._rederive({tenant_id})

    def _rederive(self, tenants: set[str]) -> None:
        # In the order the IDs' queues were made: the same replay, the same reshards.
        federated = self._federated
        named = []
        for org_id, parts in federated.items():
            if parts is None:  # split once, at the first edit that looks
                parts = federated[org_id] = frozenset(org_id.split("|"))
            if not parts.isdisjoint(tenants):
                named.append(org_id)
        for org_id in named:
            keep_org_limits(self, org_id)
