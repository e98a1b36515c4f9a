"""The config as it stood after any revision, rebuilt from the revisions, and diffs of states."""

from __future__ import annotations

from typing import Any

import pytest

from api.store import selectors, services
from api.store.config_yaml import settings_canonical
from api.store.models import ConfigRevision
from api.store.revision_states import (
    CONFIG,
    OVERRIDES,
    SETTINGS,
    TENANT,
    Scope,
    compare_revisions,
    revision_comparison,
    rollback_preview,
    state_at,
)

pytestmark = pytest.mark.django_db

CLI = "cli"


def _snapshot() -> dict[str, Any]:
    return {
        "overrides": selectors.runtime_config_export(),
        # As the settings scope shows them: defaults filled in.
        "settings": settings_canonical(selectors.settings_get().config),
    }


def _writes() -> dict[int, dict[str, Any]]:
    """A mixed history; the true state after each version, as read back from the tables."""
    states = {0: _snapshot()}

    def record() -> None:
        states[selectors.config_version_get()] = _snapshot()

    services.tenant_put(
        tenant_id="a",
        config={"max_queriers_per_tenant": 1},
        expected_version=None,
        author=None,
        source=CLI,
    )
    record()
    services.tenant_put(tenant_id="b", config={}, expected_version=None, author=None, source=CLI)
    record()
    services.settings_update(
        changes={"priority_aging": "5s"}, expected_version=None, author=None, source=CLI
    )
    record()
    services.runtime_config_import(
        overrides={"b": {"max_queriers_per_tenant": 2}, "c": {"ingestion_rate": 3}},
        author=None,
    )
    record()
    services.tenant_patch(
        tenant_id="c",
        changes={"max_queriers_per_tenant": 4},
        expected_version=None,
        author=None,
        source=CLI,
    )
    record()
    services.tenant_delete(tenant_id="b", expected_version=None, author=None, source=CLI)
    record()
    services.tenant_put(
        tenant_id="a",
        config={"max_queriers_per_tenant": 9},
        expected_version=None,
        author=None,
        source=CLI,
    )
    record()
    services.settings_update(
        changes={"layout": "component-first"}, expected_version=None, author=None, source=CLI
    )
    record()
    return states


def test_the_state_after_every_version_is_rebuilt_exactly_for_every_scope():
    states = _writes()
    assert len(states) == 9
    for version, truth in states.items():
        assert state_at(Scope(OVERRIDES), version) == truth["overrides"], version
        assert state_at(Scope(SETTINGS), version) == truth["settings"], version
        whole = state_at(Scope(CONFIG), version)
        assert whole == {"overrides": truth["overrides"], "settings": truth["settings"]}
        for tenant in "abc":
            expected = truth["overrides"].get(tenant)
            assert state_at(Scope(TENANT, tenant), version) == expected, (version, tenant)


def test_comparing_two_revisions_of_different_kinds_diffs_the_whole_config():
    _writes()
    first = ConfigRevision.objects.order_by("version").first()
    last = ConfigRevision.objects.order_by("version").last()
    assert first is not None and last is not None
    found = compare_revisions(first, last)
    assert found.scope == Scope(CONFIG)
    paths = [c.path for c in found.diff]
    assert paths == [
        "overrides.a.max_queriers_per_tenant",
        "overrides.c",
        "settings.layout",
        "settings.priority_aging",
    ]
    assert found.yaml_diff.startswith(f"--- after #{first.version}\n+++ after #{last.version}\n")


def test_two_revisions_of_one_tenant_compare_that_tenants_block():
    _writes()
    edits = list(ConfigRevision.objects.filter(key="a").order_by("version"))
    found = compare_revisions(edits[0], edits[-1])
    assert found.scope == Scope(TENANT, "a")
    assert [(c.path, c.before, c.after) for c in found.diff] == [("max_queriers_per_tenant", 1, 9)]
    assert "-  max_queriers_per_tenant: 1\n+  max_queriers_per_tenant: 9\n" in found.yaml_diff


def test_a_revisions_own_diff_shows_an_import_as_its_overrides_section():
    _writes()
    imported = ConfigRevision.objects.get(kind=ConfigRevision.Kind.RUNTIME_CONFIG)
    found = revision_comparison(imported)
    assert found.scope == Scope(OVERRIDES)
    assert "+  c: {}\n" in found.yaml_diff and "-  a:\n" in found.yaml_diff


@pytest.mark.parametrize("kind", ["tenant", "settings", "runtime-config"])
def test_the_rollback_preview_is_exactly_what_the_rollback_then_changes(kind):
    _writes()
    target = ConfigRevision.objects.filter(kind=kind).order_by("version").first()
    assert target is not None
    preview = rollback_preview(target)
    assert preview.changed
    services.revision_rollback(revision_id=target.pk, author=None)
    newest = ConfigRevision.objects.order_by("-version").first()
    assert newest is not None
    applied = revision_comparison(newest)
    assert applied.diff == preview.diff
    assert not rollback_preview(target).changed
