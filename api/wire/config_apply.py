"""The database's config onto a runtime: everything, or only what changed since a version.

`load_update` reads, in one call (one thread hop per reconcile), what
changed since the version a host applied: a delta naming the tenants to
read again (`api.store.config_delta`), or the whole config when no delta can
say it. `ConfigApplier` keeps the tenant limits it last gave the runtime,
so a full reload touches only the tenants whose block changed or went, and
a delta only the tenants it names: a write to one tenant costs one tenant's
work however many there are. The runtime's setters wake its dispatcher.

A stored block that no longer validates (the validator tightened since it
was saved) runs under the defaults (`api.store.selectors`); the applier
also keeps which blocks those are (`Invalid`), for /metrics
(`api.wire.invalid_config_metrics`): an upgrade that changed how a tenant
is scheduled must not show as one log line only.

Whoever must hear of a tenant's block going (a REST DELETE, an import
without it) subscribes with `on_tenant_removed`: /metrics drops the rule
counters it kept while the tenant was configured (`api.wire.metrics`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from api.store import selectors
from api.store.config_delta import ConfigDelta, config_changes_since
from scheduler_core.model import QueueConfig, TenantLimits
from scheduler_core.runtime import SchedulerRuntime

__all__ = [
    "ConfigApplier",
    "FullConfig",
    "Invalid",
    "load_config",
    "load_update",
    "on_tenant_removed",
]

FullConfig = tuple[int, QueueConfig, dict[str, TenantLimits]]
# Called with the runtime and the tenant ID, after the applier removed its limits.
Removed = Callable[[SchedulerRuntime, str], None]
_REMOVED: list[Removed] = []


def on_tenant_removed(callback: Removed) -> None:
    """Call `callback(runtime, tenant_id)` whenever an applier drops a tenant's block.

    The runtime is passed so a subscriber can tell the serving host's
    applier from another one (a test's).
    """
    if callback not in _REMOVED:
        _REMOVED.append(callback)


@dataclass(frozen=True, slots=True)
class Invalid:
    """Which of the stored blocks one load read no longer validate.

    `settings` is None when the load did not read the settings; `tenants`
    are the failing ones among those it read.
    """

    settings: bool | None = None
    tenants: frozenset[str] = field(default_factory=frozenset)


def _load_full() -> tuple[FullConfig, Invalid]:
    # The version first, so data read after it is at least that new.
    version = selectors.config_version_get()
    config, settings_errors = selectors.queue_config_checked()
    stored = selectors.tenant_limits_stored()
    return (version, config, stored.limits), Invalid(bool(settings_errors), stored.invalid)


def load_config() -> FullConfig:
    """The whole stored config, as the scheduler runs it."""
    return _load_full()[0]


def load_update(applied: int) -> tuple[int, ConfigDelta | None, FullConfig | None, Invalid]:
    """What changed since `applied`: a delta, or (when that cannot be) everything;
    and which of the blocks read no longer validate."""
    current, delta = config_changes_since(applied)
    if delta is None:
        full, invalid = _load_full()
        return full[0], None, full, invalid
    settings = None if delta.queue_config is None else delta.settings_invalid
    return current, delta, None, Invalid(settings, delta.invalid)


class ConfigApplier:
    """Applies configs to one runtime, remembering the tenant limits it applied."""

    def __init__(
        self,
        runtime: SchedulerRuntime,
        on_limits: Callable[[str, TenantLimits], None] | None = None,
    ) -> None:
        """`on_limits(tenant_id, limits)` is told each tenant whose limits it set."""
        self.runtime = runtime
        self._on_limits = on_limits
        self._limits: dict[str, TenantLimits] = {}
        # The stored blocks that no longer validate, as of the last apply.
        self.invalid_settings = False
        self.invalid_tenants: set[str] = set()

    def configured(self, tenant_id: str) -> bool:
        """Whether the applied config has a block for this tenant."""
        return tenant_id in self._limits

    def apply_full(
        self, config: QueueConfig, limits: dict[str, TenantLimits], invalid: Invalid = Invalid()
    ) -> None:
        self.invalid_settings = bool(invalid.settings)
        self.invalid_tenants = set(invalid.tenants)
        if self.runtime.config != config:
            self.runtime.set_config(config)
        # Replaced first, so a removal's subscribers see the tenant unconfigured.
        applied, self._limits = self._limits, dict(limits)
        with self.runtime.limits_batch():
            for tenant_id in set(applied) - set(limits):
                self._remove(tenant_id)
            for tenant_id, tenant_limits in limits.items():
                if applied.get(tenant_id) != tenant_limits:
                    self._set(tenant_id, tenant_limits)

    def apply_delta(self, delta: ConfigDelta, invalid: Invalid = Invalid()) -> None:
        if invalid.settings is not None:
            self.invalid_settings = invalid.settings
        self.invalid_tenants.difference_update(delta.tenants)
        self.invalid_tenants.update(invalid.tenants)
        if delta.queue_config is not None and self.runtime.config != delta.queue_config:
            self.runtime.set_config(delta.queue_config)
        with self.runtime.limits_batch():
            for tenant_id, tenant_limits in delta.tenants.items():
                if tenant_limits is None:
                    if self._limits.pop(tenant_id, None) is not None:
                        self._remove(tenant_id)
                elif self._limits.get(tenant_id) != tenant_limits:
                    self._set(tenant_id, tenant_limits)
                    self._limits[tenant_id] = tenant_limits

    def _set(self, tenant_id: str, limits: TenantLimits) -> None:
        self.runtime.set_tenant_limits(tenant_id, limits)
        if self._on_limits is not None:
            self._on_limits(tenant_id, limits)

    def _remove(self, tenant_id: str) -> None:
        self.runtime.remove_tenant_limits(tenant_id)
        if self._on_limits is not None:
            # It runs under the default limits from now on: a change too.
            self._on_limits(tenant_id, self.runtime.tenant_limits(tenant_id))
        for callback in _REMOVED:
            callback(self.runtime, tenant_id)
