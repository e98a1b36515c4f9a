"""Every write to the config store goes through these functions.

Here: one tenant (put, patch, delete), the scheduler settings, rollback of
any revision, and the operator-cancel audit record. Importing a whole
runtime-config lives in `services_import`, API tokens in `tokens`; both
are re-exported here, so callers import every write from this module.
The settings lock and revision record all of them share are in
`services_record`.

Each write, in one transaction: validates the whole resulting config with
`scheduler_core.validation` (a rejected change writes nothing), checks the
caller's expected version, locks the settings row (which serialises all
config writers, so global versions are gap-free and increasing), stores a
`ConfigRevision` with before and after, and bumps the global config version.
`api.store.config_events.publish(version)` runs only after commit, so the running
scheduler never applies a change that could still roll back.

Version rules: `expected_version` is the `version` the caller last read.
For `tenant_put`, None means "create: the tenant must not exist" and
`ANY_VERSION` "replace whatever version exists" (`If-Match: *`). For
patch, delete and settings, None means "unconditional" (the REST layer
decides whether to demand If-Match). A write that changes nothing records
no revision and bumps nothing.

May import: `api.store` models, exceptions, `import_plan`, `tokens`,
`services_record`, `services_import`, `scheduler_core`, Django.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Final, Literal

from django.db import transaction

from api.store import selectors
from api.store.config_yaml import settings_canonical
from api.store.exceptions import ConfigValidationError, NotFound, VersionConflict
from api.store.import_plan import (
    Author,
    ImportResult,
    merge_patch,
    overrides_restored,
    patched_tenant,
    validate_tenant,
)
from api.store.models import ConfigRevision, OperatorCancel, SchedulerSettings, Tenant
from api.store.services_import import _overrides_apply, runtime_config_import
from api.store.services_record import (
    Kind,
    Source,
    author_fields,
    lock_settings,
    record_revision,
    revision_tenants_fill,
)
from api.store.tokens import api_token_authenticate, api_token_issue, api_token_revoke
from scheduler_core.errors import ConfigInvalid, FieldError
from scheduler_core.model import QueueConfig
from scheduler_core.validation import (
    queue_config_from_dict,
    queue_config_to_dict,
    validate_queue_settings,
)

__all__ = [
    "ANY_VERSION",
    "ROLLBACK_NOTE_MAX",
    "AnyVersion",
    "ImportResult",
    "api_token_authenticate",
    "api_token_issue",
    "api_token_revoke",
    "merge_patch",
    "operator_cancel_record",
    "patched_tenant",
    "revision_rollback",
    "revision_tenants_fill",
    "rollback_note_problem",
    "runtime_config_import",
    "settings_update",
    "tenant_delete",
    "tenant_patch",
    "tenant_put",
]


class AnyVersion(enum.Enum):
    """The type of `ANY_VERSION`; an enum so type checkers tell it from a version."""

    ANY = "any"


ANY_VERSION: Final = AnyVersion.ANY

# A rollback's change note, within the revision's 500-character message
# after its "rollback of revision #N: " lead (a version of up to 12 digits):
# longer, it would be cut without a word.
ROLLBACK_NOTE_MAX: Final = 500 - len("rollback of revision #999999999999: ")


def _check_existing(tenant: Tenant | None, expected: int | None) -> Tenant:
    if tenant is None:
        raise NotFound("no such tenant")
    if expected is not None and expected != tenant.version:
        raise VersionConflict(tenant.version)
    return tenant


def _tenant_write(
    row: SchedulerSettings,
    *,
    tenant_id: str,
    tenant: Tenant | None,
    config: dict[str, Any] | None,
    author: Author | None,
    source: str,
    message: str,
) -> Tenant | None:
    """Create, replace or (config None) delete one tenant, with its revision."""
    before = tenant.config if tenant is not None else None
    if before == config:
        return tenant
    revision = record_revision(
        row,
        kind=Kind.TENANT,
        key=tenant_id,
        before=before,
        after=config,
        author=author,
        source=source,
        message=message,
    )
    if config is None:
        assert tenant is not None
        tenant.delete()
        return None
    if tenant is None:
        tenant = Tenant(tenant_id=tenant_id)
    tenant.config = config
    tenant.version = revision.version
    tenant.save()
    return tenant


def _locked_tenant(tenant_id: str) -> Tenant | None:
    return Tenant.objects.select_for_update().filter(tenant_id=tenant_id).first()


@transaction.atomic
def tenant_put(
    *,
    tenant_id: str,
    config: Mapping[str, Any],
    expected_version: int | None | Literal[AnyVersion.ANY],
    author: Author | None,
    source: str,
    message: str = "",
) -> Tenant:
    """Create the tenant (expected_version None) or replace its whole config."""
    clean = validate_tenant(tenant_id, config)
    row = lock_settings()
    tenant = _locked_tenant(tenant_id)
    current = tenant.version if tenant is not None else None
    # Checked here, under the lock, not against the version the view read:
    # `If-Match: *` turned into that version made every concurrent
    # unconditional replace but the first a 412.
    matches = (
        current is not None if expected_version is ANY_VERSION else current == expected_version
    )
    if not matches:
        raise VersionConflict(current)
    saved = _tenant_write(
        row,
        tenant_id=tenant_id,
        tenant=tenant,
        config=clean,
        author=author,
        source=source,
        message=message,
    )
    assert saved is not None
    return saved


@transaction.atomic
def tenant_patch(
    *,
    tenant_id: str,
    changes: Mapping[str, Any],
    expected_version: int | None,
    author: Author | None,
    source: str,
    message: str = "",
) -> Tenant:
    """Apply a JSON merge patch to an existing tenant's config."""
    row = lock_settings()
    tenant = _check_existing(_locked_tenant(tenant_id), expected_version)
    clean = patched_tenant(tenant_id, tenant.config, changes)
    saved = _tenant_write(
        row,
        tenant_id=tenant_id,
        tenant=tenant,
        config=clean,
        author=author,
        source=source,
        message=message,
    )
    assert saved is not None
    return saved


@transaction.atomic
def tenant_delete(
    *,
    tenant_id: str,
    expected_version: int | None,
    author: Author | None,
    source: str,
    message: str = "",
) -> None:
    """Delete a tenant; its queued work then falls back to the default limits."""
    row = lock_settings()
    tenant = _check_existing(_locked_tenant(tenant_id), expected_version)
    _tenant_write(
        row,
        tenant_id=tenant_id,
        tenant=tenant,
        config=None,
        author=author,
        source=source,
        message=message,
    )


def _settings_apply(
    row: SchedulerSettings,
    *,
    config: dict[str, Any],
    author: Author | None,
    source: str,
    message: str,
) -> SchedulerSettings:
    # Compared and recorded as what ran: a row never written holds {} (the
    # defaults), and taking that literally made a first write of the very
    # defaults a revision that changed nothing, its diff listing every
    # setting as new.
    before = settings_canonical(row.config)
    if before == config:
        return row
    revision = record_revision(
        row,
        kind=Kind.SETTINGS,
        key="",
        before=before,
        after=config,
        author=author,
        source=source,
        message=message,
    )
    row.config = config
    row.version = revision.version
    row.save(update_fields=["config", "version", "updated_at"])
    return row


def _settings_normalised(raw: Mapping[str, Any], base: QueueConfig) -> dict[str, Any]:
    """Validate (partial) settings over `base`; the full canonical dict."""
    errors = validate_queue_settings(raw, base)
    if errors:
        raise ConfigValidationError(errors)
    try:
        return queue_config_to_dict(queue_config_from_dict(raw, base))
    except ConfigInvalid as exc:
        raise ConfigValidationError(exc.errors) from exc


@transaction.atomic
def settings_update(
    *,
    changes: Mapping[str, Any],
    expected_version: int | None,
    author: Author | None,
    source: str,
    message: str = "",
) -> SchedulerSettings:
    """Change some scheduler settings; the stored dict becomes complete and canonical."""
    row = lock_settings()
    if expected_version is not None and expected_version != row.version:
        raise VersionConflict(row.version)
    # Over what the scheduler runs: stored settings an upgrade's stricter
    # rules refuse run as the defaults, and a change that fixes them saves.
    current, _ = selectors.settings_as_run(row.config)
    config = _settings_normalised(changes, current)
    return _settings_apply(row, config=config, author=author, source=source, message=message)


@transaction.atomic
def revision_rollback(
    *,
    revision_id: int,
    author: Author | None,
    source: str = Source.ROLLBACK,
    note: str = "",
    expected_config_version: int | None = None,
) -> ConfigRevision | None:
    """Restore the state from before a revision, as a new revision.

    Its message is "rollback of revision #N", then `note` (the editor's
    change note, at most ROLLBACK_NOTE_MAX characters, else a
    ConfigValidationError at `note` and nothing written) when there is one.

    What the revision changed is restored: one tenant, the settings, or for
    an import the tenants it created, changed or deleted (`overrides_restored`).
    Returns the new revision, or None when that state is already current.
    The restored state is validated again, since rules may have tightened.
    `expected_config_version` (the config version the caller's preview was
    made at) raises `VersionConflict` if any change landed since: the diff
    the caller approved is then no longer what the rollback would apply.
    """
    note = note.strip()
    problem = rollback_note_problem(note)
    if problem is not None:
        raise ConfigValidationError([FieldError("note", problem)])
    row = lock_settings()
    if expected_config_version is not None and row.config_version != expected_config_version:
        raise VersionConflict(row.config_version)
    try:
        target = ConfigRevision.objects.get(pk=revision_id)
    except ConfigRevision.DoesNotExist as exc:
        raise NotFound(f"no revision {revision_id}") from exc
    version_before = row.config_version
    message = f"rollback of revision #{target.version}" + (f": {note}" if note else "")
    if target.kind == Kind.TENANT:
        config = None if target.before is None else validate_tenant(target.key, target.before)
        _tenant_write(
            row,
            tenant_id=target.key,
            tenant=_locked_tenant(target.key),
            config=config,
            author=author,
            source=source,
            message=message,
        )
    elif target.kind == Kind.SETTINGS:
        config = _settings_normalised(target.before or {}, QueueConfig())
        _settings_apply(row, config=config, author=author, source=source, message=message)
    else:
        current = dict(Tenant.objects.values_list("tenant_id", "config"))
        _overrides_apply(
            row,
            overrides=overrides_restored(target.before, target.after, current),
            author=author,
            source=source,
            message=message,
        )
    if row.config_version == version_before:
        return None
    return ConfigRevision.objects.get(version=row.config_version)


def rollback_note_problem(note: str) -> str | None:
    """What is wrong with a rollback's change note (stripped), or None."""
    length = len(note.strip())
    if length > ROLLBACK_NOTE_MAX:
        return f"at most {ROLLBACK_NOTE_MAX} characters (it has {length})"
    return None


def operator_cancel_record(
    *,
    author: Author | None,
    source: str,
    request_id: str = "",
    filter: Mapping[str, Any] | None = None,
    matched: int,
    cancelled: int,
    note: str = "",
    replicas: list[str] | None = None,
) -> OperatorCancel:
    """Record an operator's cancel after the scheduler carried it out.

    Not a config change: no version is bumped and nothing is published;
    the record is the audit trail the History page lists.
    """
    return OperatorCancel.objects.create(
        source=source,
        request_id=request_id,
        filter=dict(filter or {}),
        matched=matched,
        cancelled=cancelled,
        note=note[:500],
        replicas=list(replicas or []),
        **author_fields(author),
    )
