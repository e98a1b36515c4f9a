"""What changed in the config store since a version, so a replica applies only that.

Every committed change is one `ConfigRevision` whose `version` is the
global config version it produced, gap-free and increasing (services bump
the version and store the revision in one transaction, serialised by the
settings row lock). A replica that has applied version A and sees version
C therefore finds exactly the revisions A+1..C, and from their kind and key
which tenants (or the settings) to read again: a write to one tenant costs
one tenant's worth of work, however many tenants there are.

A full reload is still needed, and `config_changes_since` says so by
returning no delta, when the replica has nothing applied yet, when the
revisions in between are not all there (a gap: never expected, but a full
reload is always correct), when a runtime-config import (a whole tenant
set) is among them, or when so many changed that reading everything is no
dearer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from api.store import selectors
from api.store.models import ConfigRevision
from scheduler_core.model import QueueConfig, TenantLimits

__all__ = ["MAX_DELTA_REVISIONS", "ConfigDelta", "config_changes_since", "tenant_limits_of"]

logger = logging.getLogger(__name__)

# Past this many revisions in one step a full reload is as cheap and simpler.
MAX_DELTA_REVISIONS = 500

Kind = ConfigRevision.Kind


@dataclass(frozen=True, slots=True)
class ConfigDelta:
    """The changes from one version to `version`.

    `queue_config` is set when the settings changed (`settings_invalid`:
    the stored ones no longer validate, so it is the defaults); `tenants`
    maps each changed tenant to its limits now, or None when it is gone
    (deleted, or its stored block no longer validates: those are `invalid`).
    """

    version: int
    queue_config: QueueConfig | None
    tenants: dict[str, TenantLimits | None]
    settings_invalid: bool = False
    invalid: frozenset[str] = frozenset()


def tenant_limits_of(
    tenant_ids: list[str],
) -> tuple[dict[str, TenantLimits | None], frozenset[str]]:
    """These tenants' limits as stored now (None for a missing or invalid one), and the invalid."""
    stored = selectors.tenant_limits_stored(tenant_ids)
    return {t: stored.limits.get(t) for t in tenant_ids}, stored.invalid


def config_changes_since(applied: int) -> tuple[int, ConfigDelta | None]:
    """(current version, the delta from `applied`), the delta None when a full reload is due.

    The version is read first, so rows read after it are at least that new
    (a newer change read early is applied again by its own reconcile).
    """
    current = selectors.config_version_get()
    if current == applied:
        return current, ConfigDelta(current, None, {})
    # Behind what was applied: a different database (tests, a restore).
    if applied < 0 or current < applied or current - applied > MAX_DELTA_REVISIONS:
        return current, None
    rows = list(
        ConfigRevision.objects.filter(version__gt=applied, version__lte=current).values_list(
            "version", "kind", "key"
        )
    )
    if len(rows) != current - applied:
        logger.warning(
            "revisions %d..%d are not all there (%d of %d): reloading the whole config",
            applied + 1,
            current,
            len(rows),
            current - applied,
        )
        return current, None
    if any(kind == Kind.RUNTIME_CONFIG for _, kind, _ in rows):
        return current, None
    settings, settings_errors = None, []
    if any(kind == Kind.SETTINGS for _, kind, _ in rows):
        settings, settings_errors = selectors.queue_config_checked()
    tenant_ids = sorted({key for _, kind, key in rows if kind == Kind.TENANT})
    tenants, invalid = tenant_limits_of(tenant_ids) if tenant_ids else ({}, frozenset())
    return current, ConfigDelta(current, settings, tenants, bool(settings_errors), invalid)
