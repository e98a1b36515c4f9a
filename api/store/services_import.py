"""Whole tenant-set writes: importing a Cortex runtime-config (`overrides:`).

One import replaces every tenant override at once, as one revision of
kind `RUNTIME_CONFIG` (tenant-by-tenant writes are in `services`, which
re-exports `runtime_config_import`; import it from there). Its rows are
written in bulk, not one save per tenant. `_overrides_apply` is also what
`services.revision_rollback` uses to restore a tenant set.

May import: `api.store` models, exceptions, selectors, `import_plan`,
`services_record`, Django. Never `api.store.services` (which imports this module).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from api.store.exceptions import VersionConflict
from api.store.import_plan import Author, ImportResult, plan_import
from api.store.models import SchedulerSettings, Tenant
from api.store.selectors import overrides_version_get
from api.store.services_record import Kind, Source, lock_settings, record_revision

__all__ = ["runtime_config_import"]


def _overrides_apply(
    row: SchedulerSettings | None,
    *,
    overrides: Mapping[str, Any],
    author: Author | None,
    source: str,
    message: str,
) -> ImportResult:
    """Plan the import and, given the locked settings `row`, write it (None: a dry run)."""
    tenants = Tenant.objects.all() if row is None else Tenant.objects.select_for_update()
    existing = {t.tenant_id: t for t in tenants}
    plan = plan_import(overrides, {tid: t.config for tid, t in existing.items()})
    if row is None or not plan.has_changes:
        return plan
    before = {tid: t.config for tid, t in sorted(existing.items())}
    revision = record_revision(
        row,
        kind=Kind.RUNTIME_CONFIG,
        key="",
        before=before,
        after=plan.overrides,
        author=author,
        source=source,
        message=message,
    )
    _tenants_bulk_write(plan, revision.version)
    return plan.committed(revision.version, revision.pk)


def _tenants_bulk_write(plan: ImportResult, version: int) -> None:
    """A whole import's rows in two statements, not one per tenant.

    A thousand single-row saves cost a second of ORM work in the request,
    and `bulk_update`'s CASE per row is quadratic; an upsert on `tenant_id`
    keeps each existing row's primary key and `created_at`.
    """
    Tenant.objects.filter(tenant_id__in=plan.deleted).delete()
    rows = [
        Tenant(tenant_id=tenant_id, config=plan.overrides[tenant_id], version=version)
        for tenant_id in plan.created + plan.changed
    ]
    Tenant.objects.bulk_create(
        rows,
        batch_size=500,
        update_conflicts=True,
        unique_fields=["tenant_id"],
        update_fields=["config", "version", "updated_at"],
    )


@transaction.atomic
def runtime_config_import(
    *,
    overrides: Mapping[str, Any],
    author: Author | None,
    source: str = Source.YAML,
    dry_run: bool = False,
    message: str = "",
    expected_version: int | None = None,
    require_empty: bool = False,
) -> ImportResult:
    """Replace the whole set of tenant overrides with a runtime-config's.

    Tenants absent from `overrides` are deleted: the file is the complete
    desired state, as Cortex's runtime-config is. Every tenant is validated
    first and one error rejects the whole import. Fields the scheduler does
    not use (other Cortex limits) are dropped and listed in `ignored`.

    `expected_version` (None: unconditional) is the tenant set's version
    the caller last read (`selectors.overrides_version_get`, the export's
    ETag); `require_empty` accepts the import only while no tenant exists.
    Either check fails with `VersionConflict`, checked under the settings
    lock, so two GitOps writers can never silently overwrite each other.

    A dry run writes nothing and takes no lock: holding the writers' lock
    and every tenant's row while it planned a whole file (half a second at
    3,000 tenants) held up every save on every replica, for a CI job
    planning each pull request. It reads the tenants as they are then.
    """
    row = None if dry_run else lock_settings()
    if expected_version is not None or require_empty:
        current = overrides_version_get()
        if expected_version is not None and expected_version != current:
            raise VersionConflict(current)
        if require_empty and Tenant.objects.exists():
            raise VersionConflict(current)
    return _overrides_apply(row, overrides=overrides, author=author, source=source, message=message)
