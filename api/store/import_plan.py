"""Validation of tenant blocks and the plan of a runtime-config import.

Pure functions over plain dicts (no queries), so the services can validate
everything before they lock or write anything, and a dry run is exactly the
plan a real import would carry out.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from api.store.diff import Change, structural_diff
from api.store.exceptions import ConfigValidationError
from scheduler_core.bounds import MAX_TENANT_ID_LENGTH, TENANT_ID_ALPHABET, tenant_id_unsupported
from scheduler_core.errors import FieldError
from scheduler_core.fields import meant_field
from scheduler_core.validation import TENANT_KEYS, validate_tenant_config, validate_tenant_patch

__all__ = [
    "TENANT_FIELDS",
    "TENANT_ID_MAX_LENGTH",
    "Author",
    "ImportResult",
    "block_in_field_order",
    "merge_patch",
    "misspelt_field",
    "overrides_restored",
    "patched_tenant",
    "plan_import",
    "stored_copy",
    "tenant_id_errors",
    "tenant_id_part_errors",
    "validate_tenant",
]

# Cortex's limit (`tenant.ValidTenantID`), the same on both protocols.
TENANT_ID_MAX_LENGTH = MAX_TENANT_ID_LENGTH
# The override fields the scheduler uses; every other Cortex limit in a
# runtime-config file is ignored on import.
TENANT_FIELDS: frozenset[str] = frozenset(TENANT_KEYS)


def misspelt_field(key: object) -> bool:
    """A key that misspells a tenant field: kept for the validator to refuse.

    Dropped as "a Cortex limit not used here", `query_priorty:` made a block
    that quietly lost its rules: in an import every rule of that tenant,
    and in the editor a Save proposing to delete them. Cortex's strict loader
    refuses such a key too (no field of that name).

    Cached by the key's text: a runtime-config file repeats the same few
    dozen Cortex limit names under every tenant, and each costs about 20 µs.
    """
    return _misspelt(str(key))


@functools.lru_cache(maxsize=4096)
def _misspelt(text: str) -> bool:
    return meant_field(text, TENANT_FIELDS) is not None


# Every field of a tenant block, in the order Cortex's docs and the validator
# write them; a name means the same at every level it appears at, so one
# ranking orders the block, its rules, their attributes and time pairs.
_FIELD_ORDER = (
    *("max_queriers_per_tenant", "max_outstanding_requests_per_tenant", "max_query_capacity"),
    *("query_priority", "query_rejection", "enabled", "default_priority", "priorities"),
    *("priority", "reserved_queriers", "query_attributes", "regex", "time_window", "api_type"),
    *("time_range_limit", "query_step_limit", "user_agent_regex", "dashboard_uid", "panel_id"),
    *("start", "end", "min", "max"),
)
_FIELD_RANK = {name: rank for rank, name in enumerate(_FIELD_ORDER)}


def block_in_field_order(value: Any) -> Any:
    """A tenant block with every mapping's keys in `_FIELD_ORDER` (others after, as they were).

    PostgreSQL's jsonb keeps keys by length, not as written, so on the
    scale-out database the export, the YAML view and every YAML diff read
    `end:` before `start:` and `max_queriers_per_tenant:` last, and the
    editor's Save diff of a stored block against the same block from the
    form moved lines that had not changed. One order on every database.
    """
    if isinstance(value, Mapping):
        items = sorted(value.items(), key=lambda item: _FIELD_RANK.get(item[0], len(_FIELD_RANK)))
        return {key: block_in_field_order(child) for key, child in items}
    if isinstance(value, list):
        return [block_in_field_order(child) for child in value]
    return value


def stored_copy(value: Any) -> Any:
    """A private copy of a tenant block as the store keeps it: a float -0.0 is 0.0.

    Validation reads -0.0 as 0 (`scheduler_core.fields.number`), but blocks
    are stored as written, so `max_query_capacity: -0.0` was exported and
    shown in the YAML view as "-0.0". Every tenant write copies its block
    here (`validate_tenant`, an import's `_clean_overrides`), so no write
    path stores it. JSON's `-0` is the int 0 already. A key whose value is
    null is left out: validation reads it as unset, and the export wrote
    `regex: null`. Mappings and lists are copied, as `copy.deepcopy` did;
    every other value a JSON or YAML body holds (text, numbers, booleans,
    dates) is immutable.
    """
    if isinstance(value, float):
        return 0.0 if value == 0 else value
    if isinstance(value, Mapping):
        return {key: stored_copy(child) for key, child in value.items() if child is not None}
    if isinstance(value, list):
        return [stored_copy(child) for child in value]
    return value


class Author(Protocol):
    """Who made a change: a Django user, or a token's stand-in user."""

    @property
    def is_authenticated(self) -> bool: ...

    def get_username(self) -> str: ...


def tenant_id_errors(tenant_id: object, path: str = "tenant_id") -> list[FieldError]:
    """Problems with a tenant ID under Cortex's rules (at most 150 characters)."""
    if not isinstance(tenant_id, str) or not tenant_id:
        return [FieldError(path, "must be a non-empty string")]
    if tenant_id in {".", ".."}:
        return [FieldError(path, 'must not be "." or ".."')]
    return tenant_id_part_errors(tenant_id, path)


def tenant_id_part_errors(text: str, path: str) -> list[FieldError]:
    """Problems with text meant as part of a tenant ID (a search for one).

    Only length and alphabet: "" and "." are parts of IDs. Text that fails
    can be part of no tenant ID, so a search for it could only find nothing.
    """
    if len(text) > TENANT_ID_MAX_LENGTH:
        return [FieldError(path, f"at most {TENANT_ID_MAX_LENGTH} characters")]
    bad = tenant_id_unsupported(text)
    if bad:
        return [FieldError(path, f"invalid characters {bad!r}; allowed: {TENANT_ID_ALPHABET}")]
    return []


def validate_tenant(tenant_id: str, config: Any) -> dict[str, Any]:
    """A private copy of a valid tenant block; raises `ConfigValidationError`."""
    errors = tenant_id_errors(tenant_id)
    if not isinstance(config, Mapping):
        errors.append(FieldError("(root)", "a tenant config must be a mapping"))
    else:
        errors += validate_tenant_config(config)
    if errors:
        raise ConfigValidationError(errors)
    block: dict[str, Any] = stored_copy(config)
    return block


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: mappings merge, null deletes, the rest replaces."""
    if not isinstance(patch, Mapping):
        return patch
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def patched_tenant(tenant_id: str, config: Mapping[str, Any], changes: Any) -> dict[str, Any]:
    """`config` with the merge patch `changes` applied, validated (`validate_tenant`).

    A field the patch names that no block has is refused even when merging
    drops it (set to null): every error is said at once, each path once.
    """
    unknown = validate_tenant_patch(changes) if isinstance(changes, Mapping) else []
    try:
        block = validate_tenant(tenant_id, merge_patch(config, changes))
    except ConfigValidationError as exc:
        unknown += [e for e in exc.errors if e not in unknown]
        raise ConfigValidationError(unknown) from None
    if unknown:
        raise ConfigValidationError(unknown)
    return block


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import changes (or, for a dry run, would change).

    `ignored` maps a tenant to the fields dropped because the scheduler does
    not use them. `version`/`revision_id` are set only once committed with
    changes; an import that changes nothing writes no revision.
    """

    created: list[str]
    changed: list[str]
    deleted: list[str]
    unchanged: list[str]
    ignored: dict[str, list[str]]
    diffs: dict[str, list[Change]]
    overrides: dict[str, dict[str, Any]] = field(repr=False)
    version: int | None = None
    revision_id: int | None = None

    @property
    def has_changes(self) -> bool:
        return bool(self.created or self.changed or self.deleted)

    def committed(self, version: int, revision_id: int) -> ImportResult:
        return replace(self, version=version, revision_id=revision_id)


def _clean_overrides(
    overrides: Mapping[str, Any],
) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """Keep the fields we use and validate every tenant; all errors at once."""
    errors: list[FieldError] = []
    clean: dict[str, dict[str, Any]] = {}
    ignored: dict[str, list[str]] = {}
    for tenant_id, block in overrides.items():
        # A YAML key is its text (`strict_keys_loader`): `0123` is the tenant "0123".
        prefix = f"overrides.{tenant_id}"
        errors += tenant_id_errors(tenant_id, prefix)
        if block is None:
            block = {}
        if not isinstance(block, Mapping):
            errors.append(FieldError(prefix, "must be a mapping of limits"))
            continue
        used = {key for key in block if key in TENANT_FIELDS or misspelt_field(key)}
        dropped = sorted(str(key) for key in block if key not in used)
        if dropped:
            ignored[str(tenant_id)] = dropped
        kept = {key: value for key, value in block.items() if key in used}
        # Judged as written (a misspelt key set to null is refused), stored
        # without its nulls (`stored_copy`), as every other write stores it.
        errors += [
            FieldError(f"{prefix}.{e.path}" if e.path != "(root)" else prefix, e.message)
            for e in validate_tenant_config(kept)
        ]
        clean[str(tenant_id)] = stored_copy(kept)
    if errors:
        raise ConfigValidationError(errors)
    return clean, ignored


def overrides_restored(
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    current: Mapping[str, Any],
) -> dict[str, Any]:
    """The tenant set once a whole-set revision (`before` -> `after`) is rolled back.

    The tenants it changed are as they were before it (absent if it created
    them); every other tenant stays as it is now. Restoring its whole
    `before` also undid every later edit of tenants it never touched: rolling
    back a bad import an hour on threw away an hour of other editors' work.
    """
    before, after = before or {}, after or {}
    restored = {tid: copy.deepcopy(config) for tid, config in current.items()}
    for tenant_id in before.keys() | after.keys():
        if before.get(tenant_id) == after.get(tenant_id):
            continue
        if tenant_id in before:
            restored[tenant_id] = copy.deepcopy(before[tenant_id])
        else:
            restored.pop(tenant_id, None)
    return restored


def plan_import(overrides: Any, existing: Mapping[str, dict[str, Any]]) -> ImportResult:
    """Compare a whole new overrides set with the stored one; raises on any error."""
    if not isinstance(overrides, Mapping):
        raise ConfigValidationError([FieldError("overrides", "must be a mapping of tenants")])
    clean, ignored = _clean_overrides(overrides)
    created, changed, unchanged, diffs = [], [], [], {}
    for tenant_id in sorted(clean):
        old = existing.get(tenant_id)
        if old is None:
            created.append(tenant_id)
        elif old == clean[tenant_id]:
            unchanged.append(tenant_id)
            continue
        else:
            changed.append(tenant_id)
        diffs[tenant_id] = structural_diff(old or {}, clean[tenant_id])
    deleted = sorted(set(existing) - set(clean))
    for tenant_id in deleted:
        diffs[tenant_id] = structural_diff(existing[tenant_id], {})
    return ImportResult(
        created=created,
        changed=changed,
        deleted=deleted,
        unchanged=unchanged,
        ignored=ignored,
        diffs=diffs,
        overrides={tid: clean[tid] for tid in sorted(clean)},
    )
