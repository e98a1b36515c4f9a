"""The config as it stood after any revision, and the YAML diff between two states.

Revisions keep `before` and `after` of what they changed, and every write
records one, so the state after revision V is the current state with the
changes of every later revision undone, newest first. Walking back from
the current state (rather than forward from nothing) stays right even if
the oldest revisions were ever pruned.

A comparison has a scope: one tenant's block (as under `overrides:`), the
scheduler settings (defaults filled in), the tenant set (a runtime-config
file's `overrides:`), or the whole config (the tenant set and the
settings). Its `diff` uses the validator's path spelling, its `yaml_diff`
is a unified diff of the scope's YAML (`api.store.config_yaml`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from api.store.config_yaml import (
    config_yaml,
    overrides_yaml,
    settings_canonical,
    settings_yaml,
    tenant_block_yaml,
    unified_yaml_diff,
)
from api.store.diff import Change, structural_diff
from api.store.import_plan import overrides_restored
from api.store.models import SETTINGS_PK, ConfigRevision, SchedulerSettings, Tenant

__all__ = [
    "CONFIG",
    "OVERRIDES",
    "SETTINGS",
    "TENANT",
    "Comparison",
    "Scope",
    "compare_revisions",
    "revision_comparison",
    "rollback_preview",
    "scope_of",
    "state_at",
]

Kind = ConfigRevision.Kind
TENANT, SETTINGS, OVERRIDES, CONFIG = "tenant", "settings", "overrides", "config"


@dataclass(frozen=True, slots=True)
class Scope:
    """What a comparison covers: `kind` is one of the four above; `key` a tenant ID."""

    kind: str
    key: str = ""

    @property
    def label(self) -> str:
        return {
            TENANT: f"tenant {self.key}",
            SETTINGS: "scheduler settings",
            OVERRIDES: "all tenants (runtime-config overrides)",
            CONFIG: "the whole config",
        }[self.kind]


@dataclass(frozen=True, slots=True)
class Comparison:
    """Two states of one scope: the changed fields and the YAML line diff."""

    scope: Scope
    before: Any
    after: Any
    before_yaml: str
    after_yaml: str
    diff: list[Change]
    yaml_diff: str

    @property
    def changed(self) -> bool:
        return bool(self.diff)


def scope_of(revision: ConfigRevision) -> Scope:
    """The scope a revision itself changed."""
    if revision.kind == Kind.TENANT:
        return Scope(TENANT, revision.key)
    if revision.kind == Kind.SETTINGS:
        return Scope(SETTINGS)
    return Scope(OVERRIDES)


def _yaml(scope: Scope, state: Any) -> str:
    if scope.kind == TENANT:
        return tenant_block_yaml(scope.key, state)
    if scope.kind == SETTINGS:
        return settings_yaml(state)
    if scope.kind == OVERRIDES:
        return overrides_yaml(state)
    return config_yaml(state["overrides"], state["settings"])


def _comparable(scope: Scope, state: Any) -> Any:
    """The value the field diff runs on (absent tenants and default settings filled)."""
    if scope.kind == TENANT:
        return state if state is not None else {}
    if scope.kind == SETTINGS:
        return settings_canonical(state)
    if scope.kind == OVERRIDES:
        return dict(sorted((state or {}).items()))
    return {
        "overrides": dict(sorted(state["overrides"].items())),
        "settings": settings_canonical(state["settings"]),
    }


def _compare(scope: Scope, before: Any, after: Any, labels: tuple[str, str]) -> Comparison:
    before_yaml, after_yaml = _yaml(scope, before), _yaml(scope, after)
    return Comparison(
        scope=scope,
        before=before,
        after=after,
        before_yaml=before_yaml,
        after_yaml=after_yaml,
        diff=structural_diff(_comparable(scope, before), _comparable(scope, after)),
        yaml_diff=unified_yaml_diff(before_yaml, after_yaml, *labels),
    )


def revision_comparison(revision: ConfigRevision) -> Comparison:
    """A revision's own before and after, in its own scope (`yaml_diff` of the REST detail)."""
    scope = scope_of(revision)
    labels = (f"before #{revision.version}", f"after #{revision.version}")
    return _compare(scope, revision.before, revision.after, labels)


# --- states after a version ---------------------------------------------------


def _stored_settings(stored: Any) -> Any:
    # As stored, a copy: a row that holds no mapping (a hand edit, an old
    # release) is shown as it is, as `settings_canonical` shows it.
    return copy.deepcopy(stored) if stored is not None else {}


def _current_settings() -> Any:
    row = SchedulerSettings.objects.filter(pk=SETTINGS_PK).values_list("config", flat=True)
    return _stored_settings(row.first())


def _current_overrides() -> dict[str, Any]:
    return dict(Tenant.objects.values_list("tenant_id", "config"))


def _tenant_at(tenant_id: str, version: int) -> dict[str, Any] | None:
    # The first later revision touching the tenant saw, as its `before`, the
    # state after `version`; with none, the current row is that state.
    first = (
        ConfigRevision.objects.filter(version__gt=version)
        .filter(Q(kind=Kind.TENANT, key=tenant_id) | Q(kind=Kind.RUNTIME_CONFIG))
        .order_by("version")
        .first()
    )
    if first is None:
        return Tenant.objects.filter(tenant_id=tenant_id).values_list("config", flat=True).first()
    if first.kind == Kind.TENANT:
        return copy.deepcopy(first.before)
    return copy.deepcopy((first.before or {}).get(tenant_id))


def _settings_at(version: int) -> Any:
    first = (
        ConfigRevision.objects.filter(version__gt=version, kind=Kind.SETTINGS)
        .order_by("version")
        .first()
    )
    return _current_settings() if first is None else _stored_settings(first.before)


def _undo(state: dict[str, Any], revisions: Iterable[ConfigRevision]) -> dict[str, Any]:
    for revision in revisions:  # newest first
        if revision.before is None:
            state.pop(revision.key, None)
        else:
            state[revision.key] = copy.deepcopy(revision.before)
    return state


def _overrides_at(version: int) -> dict[str, Any]:
    # An import records the whole tenant set as its `before`: start from the
    # first import after `version` and undo only the tenant edits between.
    later = ConfigRevision.objects.filter(version__gt=version)
    first_import = later.filter(kind=Kind.RUNTIME_CONFIG).order_by("version").first()
    edits = later.filter(kind=Kind.TENANT)
    if first_import is None:
        return _undo(_current_overrides(), edits.order_by("-version"))
    start = copy.deepcopy(dict(first_import.before or {}))
    return _undo(start, edits.filter(version__lt=first_import.version).order_by("-version"))


def state_at(scope: Scope, version: int) -> Any:
    """The scope's state after the revision of that version (0: before any)."""
    if scope.kind == TENANT:
        return _tenant_at(scope.key, version)
    if scope.kind == SETTINGS:
        return _settings_at(version)
    if scope.kind == OVERRIDES:
        return _overrides_at(version)
    return {"overrides": _overrides_at(version), "settings": _settings_at(version)}


def _default_scope(first: ConfigRevision, second: ConfigRevision) -> Scope:
    a, b = scope_of(first), scope_of(second)
    return a if a == b else Scope(CONFIG)


def compare_revisions(
    first: ConfigRevision, second: ConfigRevision, scope: Scope | None = None
) -> Comparison:
    """The state after `first` against the state after `second`.

    Without a scope: the one both revisions changed when they share it (one
    tenant, the settings, the tenant set), else the whole config.
    """
    chosen = scope or _default_scope(first, second)
    labels = (f"after #{first.version}", f"after #{second.version}")
    before = state_at(chosen, first.version)
    after = state_at(chosen, second.version)
    return _compare(chosen, before, after, labels)


def rollback_preview(revision: ConfigRevision) -> Comparison:
    """What rolling back `revision` would change: the current state against its `before`."""
    scope = scope_of(revision)
    if scope.kind == TENANT:
        current: Any = Tenant.objects.filter(tenant_id=scope.key).values_list("config", flat=True)
        current = current.first()
        restored: Any = revision.before
    elif scope.kind == SETTINGS:
        current, restored = _current_settings(), revision.before or {}
    else:
        current = _current_overrides()
        restored = overrides_restored(revision.before, revision.after, current)
    return _compare(scope, current, restored, ("now", f"after rolling back #{revision.version}"))
