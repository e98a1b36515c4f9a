"""Which tenants a revision created, changed or deleted (`models.RevisionTenant`).

A pure function of a revision's kind, key, before and after, so the writer
(`services_record.record_revision`) and the migration that filled the rows
for revisions written before them (api/migrations/0005) agree.

May import: `models` (for the kinds) only.
"""

from __future__ import annotations

from typing import Any

from api.store.models import ConfigRevision

__all__ = ["changed_tenants"]


def changed_tenants(kind: str, key: str, before: Any, after: Any) -> list[str]:
    """The tenant IDs whose block differs between `before` and `after`, sorted.

    A tenant revision changes its `key`; an import's before and after are
    whole tenant sets (`{tenant: block}`, after null for none); a settings
    change changes no tenant.
    """
    if kind == ConfigRevision.Kind.TENANT:
        return [key] if key else []
    if kind != ConfigRevision.Kind.RUNTIME_CONFIG:
        return []
    old = before if isinstance(before, dict) else {}
    new = after if isinstance(after, dict) else {}
    return sorted(t for t in old.keys() | new.keys() if old.get(t) != new.get(t))
