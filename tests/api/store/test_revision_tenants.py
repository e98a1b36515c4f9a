"""Every revision records the tenants it created, changed or deleted, imports included.

An import (and a rollback of one) has an empty key, so a tenant's history
could not say which import deleted it; `RevisionTenant` rows can.
"""

from __future__ import annotations

from typing import Any

import pytest

from api.store import services
from api.store.models import ConfigRevision, RevisionTenant
from api.store.revision_tenants import changed_tenants
from api.store.selectors import revision_list

pytestmark = pytest.mark.django_db
API = ConfigRevision.Source.API
TENANT, SETTINGS, IMPORT = (
    ConfigRevision.Kind.TENANT,
    ConfigRevision.Kind.SETTINGS,
    ConfigRevision.Kind.RUNTIME_CONFIG,
)


def _put(tenant_id: str, config: dict[str, Any]) -> None:
    services.tenant_put(
        tenant_id=tenant_id, config=config, expected_version=None, author=None, source=API
    )


def _import(overrides: dict[str, Any]) -> ConfigRevision:
    services.runtime_config_import(overrides=overrides, author=None)
    revision = ConfigRevision.objects.order_by("-version").first()
    assert revision is not None and revision.kind == IMPORT
    return revision


def _rows() -> dict[int, list[str]]:
    rows: dict[int, list[str]] = {}
    for revision_id, tenant in RevisionTenant.objects.order_by("tenant_id").values_list(
        "revision__version", "tenant_id"
    ):
        rows.setdefault(revision_id, []).append(tenant)
    return rows


@pytest.mark.parametrize(
    "kind, key, before, after, changed",
    [
        (TENANT, "acme", None, {"max_queriers_per_tenant": 1}, ["acme"]),
        (TENANT, "acme", {"max_queriers_per_tenant": 1}, None, ["acme"]),
        (SETTINGS, "", {"layout": "tenant-first"}, {"layout": "component-first"}, []),
        (
            IMPORT,
            "",
            {"keep": {}, "change": {"a": 1}, "gone": {}},
            {"keep": {}, "change": {"a": 2}, "new": {}},
            ["change", "gone", "new"],
        ),
        (IMPORT, "", {"gone": {}}, None, ["gone"]),
    ],
)
def test_the_tenants_a_revision_changed_are_those_whose_block_differs(
    kind: str, key: str, before: Any, after: Any, changed: list[str]
) -> None:
    assert changed_tenants(kind, key, before, after) == changed


def test_imports_and_their_rollbacks_are_found_by_the_tenants_they_changed() -> None:
    _put("keep", {})
    _put("gone", {"max_queriers_per_tenant": 2})
    deleting = _import({"keep": {}, "new": {}})
    services.revision_rollback(revision_id=deleting.pk, author=None)

    def versions(**filters: Any) -> list[int]:
        return list(revision_list(**filters).values_list("version", flat=True))

    # gone: its creation, the import that deleted it, the rollback that restored it.
    assert versions(changed="gone") == [4, 3, 2]
    assert versions(changed="keep") == [1]  # the import left it as it was
    assert versions(changed="new") == [4, 3]
    assert versions(changed_part="ON") == [4, 3, 2]  # gone, any case
    assert versions(key="gone") == [2]  # `key` is unchanged: the tenant's own writes
    assert _rows() == {1: ["keep"], 2: ["gone"], 3: ["gone", "new"], 4: ["gone", "new"]}


def test_revisions_written_without_their_tenants_get_them_filled_once() -> None:
    # As a replica of an older version writes them during a rolling upgrade.
    _put("acme", {"max_queriers_per_tenant": 1})
    _import({"acme": {"max_queriers_per_tenant": 2}, "beta": {}})
    _put("gamma", {})
    RevisionTenant.objects.filter(revision__version__lte=2).delete()
    assert services.revision_tenants_fill(0, 3) == 2
    assert _rows() == {1: ["acme"], 2: ["acme", "beta"], 3: ["gamma"]}
    assert services.revision_tenants_fill(0, 3) == 0
    assert [r.version for r in revision_list(changed="beta")] == [2]


def test_only_the_versions_asked_are_filled() -> None:
    for tenant in ("a", "b", "c"):
        _put(tenant, {})
    RevisionTenant.objects.all().delete()
    assert services.revision_tenants_fill(1, 2) == 1
    assert _rows() == {2: ["b"]}
