"""The database's config onto a runtime: everything, or only what changed since a version.

`load_update` reads, in one call (one thread hop per reconcile), what
changed since the version a host applied: a delta naming the tenants to
read again (`api.store.config_delta`), or the whole config when no delta can
say it. `ConfigApplier` keeps the tenant limits it last gave the runtime,
so a full reload touches only the tenants whose block changed or went, and
a delta only the tenants it names: a write to one tenant costs one tenant's
work however many there are. The runtime's setters wake its dispatcher.
"""

from __future__ import annotations

from api.store import selectors
from api.store.config_delta import ConfigDelta, config_changes_since
from scheduler_core.model import QueueConfig, TenantLimits
from scheduler_core.runtime import SchedulerRuntime

__all__ = ["ConfigApplier", "FullConfig", "load_config", "load_update"]

FullConfig = tuple[int, QueueConfig, dict[str, TenantLimits]]


def load_config() -> FullConfig:
    """The version first, so data read after it is at least that new."""
    version = selectors.config_version_get()
    return version, selectors.queue_config_get(), selectors.tenant_limits_all()


def load_update(applied: int) -> tuple[int, ConfigDelta | None, FullConfig | None]:
    """What changed since `applied`: a delta, or (when that cannot be) everything."""
    current, delta = config_changes_since(applied)
    if delta is not None:
        return current, delta, None
    full = load_config()
    return full[0], None, full


class ConfigApplier:
    """Applies configs to one runtime, remembering the tenant limits it applied."""

    def __init__(self, runtime: SchedulerRuntime) -> None:
        self.runtime = runtime
        self._limits: dict[str, TenantLimits] = {}

    def configured(self, tenant_id: str) -> bool:
        """Whether the applied config has a block for this tenant."""
        return tenant_id in self._limits

    def apply_full(self, config: QueueConfig, limits: dict[str, TenantLimits]) -> None:
        if self.runtime.config != config:
            self.runtime.set_config(config)
        for tenant_id in set(self._limits) - set(limits):
            self.runtime.remove_tenant_limits(tenant_id)
        for tenant_id, tenant_limits in limits.items():
            if self._limits.get(tenant_id) != tenant_limits:
                self.runtime.set_tenant_limits(tenant_id, tenant_limits)
        self._limits = dict(limits)

    def apply_delta(self, delta: ConfigDelta) -> None:
        if delta.queue_config is not None and self.runtime.config != delta.queue_config:
            self.runtime.set_config(delta.queue_config)
        for tenant_id, tenant_limits in delta.tenants.items():
            if tenant_limits is None:
                if self._limits.pop(tenant_id, None) is not None:
                    self.runtime.remove_tenant_limits(tenant_id)
            elif self._limits.get(tenant_id) != tenant_limits:
                self.runtime.set_tenant_limits(tenant_id, tenant_limits)
                self._limits[tenant_id] = tenant_limits
