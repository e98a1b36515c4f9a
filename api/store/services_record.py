"""What every config write shares: the settings lock and the revision record.

A write takes `lock_settings()` first (the one row lock that serialises
all config writers, so global versions are gap-free and increasing) and
ends each change with `record_revision`, which bumps the global version, stores
the `ConfigRevision` and publishes the version after commit. Kept apart
from `services` so that `services` (which re-exports `services_import`'s
public names) and `services_import` can both use them without importing
each other in a circle.

Package-private: only the `api.store.services*` modules import it.
May import: `api.store` models, `import_plan` (for `Author`), `config_events`,
`revision_tenants`, Django.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from api.store import config_events
from api.store.import_plan import Author
from api.store.models import SETTINGS_PK, ConfigRevision, RevisionTenant, SchedulerSettings
from api.store.revision_tenants import changed_tenants

__all__ = [
    "Kind",
    "Source",
    "author_fields",
    "lock_settings",
    "record_revision",
    "revision_tenants_fill",
]

Source = ConfigRevision.Source
Kind = ConfigRevision.Kind


def lock_settings() -> SchedulerSettings:
    row, _ = SchedulerSettings.objects.select_for_update().get_or_create(pk=SETTINGS_PK)
    return row


def author_fields(author: Author | None) -> dict[str, Any]:
    if author is None or not getattr(author, "is_authenticated", False):
        return {"author": None, "author_name": ""}
    user = author if isinstance(author, get_user_model()) else None
    return {"author": user, "author_name": author.get_username()}


def record_revision(
    row: SchedulerSettings,
    *,
    kind: str,
    key: str,
    before: Any,
    after: Any,
    author: Author | None,
    source: str,
    message: str,
) -> ConfigRevision:
    """Bump the global version, store the revision and the tenants it changed
    (`RevisionTenant`), publish after commit."""
    row.config_version += 1
    row.save(update_fields=["config_version", "updated_at"])
    version = row.config_version
    revision = ConfigRevision.objects.create(
        kind=kind,
        key=key,
        before=before,
        after=after,
        version=version,
        source=source,
        message=message[:500],
        **author_fields(author),
    )
    RevisionTenant.objects.bulk_create(
        [
            RevisionTenant(revision=revision, tenant_id=tenant)
            for tenant in changed_tenants(kind, key, before, after)
        ],
        batch_size=500,
    )
    transaction.on_commit(lambda: config_events.publish(version))
    return revision


def revision_tenants_fill(after_version: int, up_to_version: int) -> int:
    """Record the tenants changed by the revisions after `after_version` up to
    `up_to_version` that lack that record; how many were filled.

    This code records them as it writes (`record_revision`), and migration
    0005 filled the history before it, once. A replica still on an older
    version during a rolling upgrade (migrate first, then roll) wrote
    revisions without them, and the history's tenant filters missed those
    for good ("which import deleted this tenant?" found nothing). Each
    replica runs this over the versions it applies; rows another replica
    added meanwhile are skipped (the unique constraint).
    """
    missing = ConfigRevision.objects.filter(
        version__gt=after_version,
        version__lte=up_to_version,
        kind__in=(Kind.TENANT, Kind.RUNTIME_CONFIG),
        tenants_changed__isnull=True,
    ).order_by("version")
    filled = 0
    for revision in missing.iterator(chunk_size=200):
        tenants = changed_tenants(revision.kind, revision.key, revision.before, revision.after)
        if tenants:
            RevisionTenant.objects.bulk_create(
                [RevisionTenant(revision=revision, tenant_id=tenant) for tenant in tenants],
                batch_size=500,
                ignore_conflicts=True,
            )
            filled += 1
    return filled
