"""Read-only queries of the config store, shared by views, consumers and the runtime host.

Stored configs were validated on write, so turning them into scheduler
values here does not fail unless the validator tightened since (an upgrade).
Such a tenant runs under the default limits, as it would with no block:
every reader here (runtime, explain) and `scheduler_core.dry_run.limits_of`
(dry run, rule stats, what-if) agree on that, on every replica, which a
partial or remembered reading would not. So that it is not silent, the
loads say which blocks failed (`StoredLimits.invalid`, `queue_config_checked`):
the runtime counts them on /metrics and the tenant pages show the errors.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from api.store.diff import Change, structural_diff
from api.store.exceptions import ConfigValidationError, NotFound
from api.store.import_plan import block_in_field_order
from api.store.models import (
    SETTINGS_PK,
    ConfigRevision,
    OperatorCancel,
    RevisionTenant,
    SchedulerSettings,
    Tenant,
)
from scheduler_core.classify import classify, select_pair
from scheduler_core.errors import ConfigInvalid, FieldError
from scheduler_core.federation import combined_limits
from scheduler_core.model import QueueConfig, TenantLimits
from scheduler_core.priority import PriorityMatch, match_priority
from scheduler_core.rejection import RejectionMatch, match_rejection
from scheduler_core.validation import queue_config_from_dict, tenant_limits_from_dict

__all__ = [
    "Explanation",
    "StoredLimits",
    "config_version_get",
    "overrides_version_get",
    "query_explain",
    "queue_config_checked",
    "settings_as_run",
    "queue_config_get",
    "operator_cancel_list",
    "revision_diff",
    "revision_get",
    "revision_list",
    "runtime_config_export",
    "settings_get",
    "tenant_get",
    "tenant_configs",
    "tenant_limits_all",
    "tenant_limits_stored",
    "tenant_list",
]

logger = logging.getLogger(__name__)


def tenant_get(*, tenant_id: str) -> Tenant:
    """The tenant; raises `NotFound`."""
    try:
        return Tenant.objects.get(tenant_id=tenant_id)
    except Tenant.DoesNotExist as exc:
        raise NotFound(f"no tenant {tenant_id!r}") from exc


def tenant_list(*, search: str | None = None) -> QuerySet[Tenant]:
    """Tenants by ID; `search` keeps those whose ID contains it (any case)."""
    tenants = Tenant.objects.order_by("tenant_id")
    if search:
        tenants = tenants.filter(tenant_id__icontains=search)
    return tenants


def tenant_configs(tenant_ids: list[str]) -> dict[str, Any]:
    """The stored blocks of those of `tenant_ids` that exist, by tenant ID."""
    rows = Tenant.objects.filter(tenant_id__in=tenant_ids).values_list("tenant_id", "config")
    return dict(sorted(rows))


@dataclass(frozen=True, slots=True)
class StoredLimits:
    """Stored tenant blocks as the scheduler uses them.

    `limits` has each tenant whose block validates; `invalid` the tenants
    whose block no longer does, which run under the default limits.
    """

    limits: dict[str, TenantLimits]
    invalid: frozenset[str]


def tenant_limits_stored(tenant_ids: list[str] | None = None) -> StoredLimits:
    """Every tenant's limits (or only those of `tenant_ids`), and whose block failed."""
    rows = Tenant.objects.values_list("tenant_id", "config")
    if tenant_ids is not None:
        rows = rows.filter(tenant_id__in=tenant_ids)
    limits: dict[str, TenantLimits] = {}
    invalid: set[str] = set()
    for tenant_id, config in rows:
        try:
            limits[tenant_id] = tenant_limits_from_dict(config)
        except ConfigInvalid as exc:
            _log_invalid(tenant_id, exc)
            invalid.add(tenant_id)
    return StoredLimits(limits, frozenset(invalid))


def tenant_limits_all() -> dict[str, TenantLimits]:
    """Every tenant's limits as the scheduler uses them (a failing block: none, the defaults)."""
    return tenant_limits_stored().limits


def _log_invalid(tenant_id: str, exc: ConfigInvalid) -> None:
    logger.error(
        "stored config of tenant %r no longer validates, running it under the default "
        "limits until it is saved again: %s",
        tenant_id,
        exc,
    )


def settings_get() -> SchedulerSettings:
    """The settings row (an unsaved default one before the first migration data)."""
    row = SchedulerSettings.objects.filter(pk=SETTINGS_PK).first()
    return row if row is not None else SchedulerSettings(pk=SETTINGS_PK)


def queue_config_checked() -> tuple[QueueConfig, list[FieldError]]:
    """The scheduler settings over `QueueConfig`'s defaults, and why they no longer validate."""
    return settings_as_run(settings_get().config)


def settings_as_run(stored: Mapping[str, Any]) -> tuple[QueueConfig, list[FieldError]]:
    """Stored settings as the scheduler runs them, and why they no longer validate.

    Stored settings that fail (errors listed) give the defaults whole: a
    setting is read with the others (cross-field checks), so keeping part
    of them could run a combination nobody saved. A change is made over
    what runs (`services.settings_update`), so one that fixes them saves.
    """
    try:
        return queue_config_from_dict(stored, QueueConfig()), []
    except ConfigInvalid as exc:
        logger.error("stored scheduler settings no longer validate, using defaults: %s", exc)
        return QueueConfig(), exc.errors


def queue_config_get() -> QueueConfig:
    """The scheduler settings over `QueueConfig`'s defaults (see `queue_config_checked`)."""
    return queue_config_checked()[0]


def config_version_get() -> int:
    """The global config version: replicas reconcile until they have applied it."""
    version = (
        SchedulerSettings.objects.filter(pk=SETTINGS_PK)
        .values_list("config_version", flat=True)
        .first()
    )
    return version or 0


# The kinds of revision that change the tenant set (a rollback of either is
# recorded as the same kind), so the runtime-config export's version.
_OVERRIDES_KINDS = (ConfigRevision.Kind.TENANT, ConfigRevision.Kind.RUNTIME_CONFIG)


def overrides_version_get() -> int:
    """The version of the tenant set: that of its last change (0 if none ever).

    The runtime-config export's ETag. Unlike the global version it does
    not move when only scheduler settings change, so a GitOps client's
    If-Match stays valid across a settings edit; versions never repeat, so
    a deleted-and-recreated tenant set can never match an old tag.
    """
    version = (
        ConfigRevision.objects.filter(kind__in=_OVERRIDES_KINDS)
        .order_by("-version")
        .values_list("version", flat=True)
        .first()
    )
    return version or 0


def revision_list(
    *,
    kind: str | None = None,
    key: str | None = None,
    search: str | None = None,
    since_version: int | None = None,
    changed: str | None = None,
    changed_part: str | None = None,
) -> QuerySet[ConfigRevision]:
    """Revisions, newest first, optionally of one kind/key or after a version.

    `key` is one key exactly; `search` keeps the keys containing it (any case).
    `changed` keeps the revisions that created, changed or deleted that tenant
    (its own writes, and imports and their rollbacks, whose key is empty);
    `changed_part` those that changed a tenant whose ID contains it (any case).
    """
    revisions = ConfigRevision.objects.select_related("author").order_by("-version")
    if kind:
        revisions = revisions.filter(kind=kind)
    if key is not None:
        revisions = revisions.filter(key=key)
    if search:
        revisions = revisions.filter(key__icontains=search)
    if changed is not None:
        revisions = revisions.filter(
            pk__in=RevisionTenant.objects.filter(tenant_id=changed).values("revision_id")
        )
    if changed_part:
        revisions = revisions.filter(
            pk__in=RevisionTenant.objects.filter(tenant_id__icontains=changed_part).values(
                "revision_id"
            )
        )
    if since_version is not None:
        revisions = revisions.filter(version__gt=since_version)
    return revisions


def operator_cancel_list() -> QuerySet[OperatorCancel]:
    """Operators' cancels, newest first."""
    return OperatorCancel.objects.select_related("author").order_by("-created_at", "-id")


def revision_get(*, revision_id: int) -> ConfigRevision:
    """The revision; raises `NotFound`."""
    try:
        return ConfigRevision.objects.select_related("author").get(pk=revision_id)
    except ConfigRevision.DoesNotExist as exc:
        raise NotFound(f"no revision {revision_id}") from exc


def revision_diff(revision: ConfigRevision) -> list[Change]:
    """The changed fields of a revision; a creation or deletion lists every field."""
    before = revision.before if revision.before is not None else {}
    after = revision.after if revision.after is not None else {}
    return structural_diff(before, after)


def runtime_config_export() -> dict[str, Any]:
    """Every tenant's block as Cortex's runtime-config `overrides` mapping.

    Keys in field order (`block_in_field_order`), whatever the database keeps.
    """
    return {
        tenant_id: block_in_field_order(config)
        for tenant_id, config in Tenant.objects.order_by("tenant_id").values_list(
            "tenant_id", "config"
        )
    }


# --- explain one query -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Explanation:
    """What the scheduler would do with one request, and why.

    `limits` are the ones explained against: the tenant's stored block, a
    draft block the caller sent, or the defaults for an unknown tenant
    (`tenant_configured` False).
    """

    tenant_id: str
    tenant_configured: bool
    now: float
    component: str
    select_range: tuple[float, float] | None
    limits: TenantLimits
    match: PriorityMatch
    # Checked before priorities: with `attribute_index` set the request is
    # rejected (422) and `match` is what it would have got otherwise.
    rejection: RejectionMatch | None = None


def _explain_limits(tenant_id: str, draft: Any | None) -> tuple[TenantLimits, bool]:
    if draft is not None:
        if not isinstance(draft, Mapping):
            raise ConfigValidationError([FieldError("tenant_config", "must be a mapping")])
        try:
            return tenant_limits_from_dict(draft), True
        except ConfigInvalid as exc:
            raise ConfigValidationError(
                [FieldError(_prefixed("tenant_config", e.path), e.message) for e in exc.errors]
            ) from exc
    if "|" in tenant_id:
        # A federated ID runs under its tenants' combined limits on both
        # doors; explaining it against a block of its own (there is none)
        # would answer for a request the scheduler never sees.
        return _federated_limits(tenant_id.split("|"))
    return _stored_limits(tenant_id)


# More tenants than this are read by reading every stored block (a bounded
# table) rather than by a query naming each: SQLite takes at most 32,766
# parameters, and one query per tenant held a 250,000-tenant ID for a minute.
_NAMED_AT_MOST = 500


def _federated_limits(parts: list[str]) -> tuple[TenantLimits, bool]:
    """Combined limits of the tenants in `parts`, in that order; any of them configured?

    Tenants without a block add nothing to the combination (their limits
    are the defaults: no shard, no cap, no rules), so only stored blocks are read.
    """
    wanted = set(parts)
    rows = Tenant.objects.values_list("tenant_id", "config")
    if len(wanted) <= _NAMED_AT_MOST:
        rows = rows.filter(tenant_id__in=wanted)
    stored = {tid: config for tid, config in rows if tid in wanted}
    limits = [_parsed_limits(tid, stored[tid]) for tid in parts if tid in stored]
    return combined_limits(limits), bool(stored)


def _stored_limits(tenant_id: str) -> tuple[TenantLimits, bool]:
    stored = Tenant.objects.filter(tenant_id=tenant_id).values_list("config", flat=True).first()
    if stored is None:
        return TenantLimits(), False
    return _parsed_limits(tenant_id, stored), True


def _parsed_limits(tenant_id: str, stored: Any) -> TenantLimits:
    try:
        return tenant_limits_from_dict(stored)
    except ConfigInvalid as exc:
        _log_invalid(tenant_id, exc)
        return TenantLimits()


def _prefixed(prefix: str, path: str) -> str:
    return prefix if path == "(root)" else f"{prefix}.{path}"


def query_explain(
    *,
    tenant_id: str,
    query: str,
    api_type: str,
    start: float | None,
    end: float | None,
    step: float | None,
    headers: Mapping[str, str],
    now: float,
    draft_config: Any | None = None,
    matchers: Sequence[str] | None = None,
) -> Explanation:
    """Component, data-select range and priority match of one request.

    Uses the same classifier and matcher as the scheduler's admission, with
    the stored scheduler settings' ingester/store windows, so the answer is
    what the running scheduler would decide at `now`. `matchers` are a
    metadata call's `match[]` selectors kept apart, as the gRPC door keeps
    them (None: `query` is the one selector).
    """
    limits, configured = _explain_limits(tenant_id, draft_config)
    settings_now = queue_config_get()
    found = classify(
        query=query,
        api_type=api_type,
        start=start,
        end=end,
        step=step,
        headers=headers,
        now=now,
        query_ingesters_within=settings_now.query_ingesters_within,
        query_store_after=settings_now.query_store_after,
        matchers=matchers,
    )
    return Explanation(
        tenant_id=tenant_id,
        tenant_configured=configured,
        now=now,
        component=found.component,
        select_range=select_pair(found.info),
        limits=limits,
        match=match_priority(limits.query_priority, found.info, now),
        rejection=match_rejection(limits.query_rejection, found.info, now),
    )
