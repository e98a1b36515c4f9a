"""The services' own version checks, called directly (no REST If-Match in front).

The REST layer checks If-Match before it calls a service, which would hide
a service that accepts a stale version; a direct caller (the admin, a
management command) or a race between the two checks relies on the service
alone. A stale version is one older *or* newer than the current one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from api.store import services
from api.store.exceptions import VersionConflict
from api.store.models import ConfigRevision, Tenant
from api.store.selectors import config_version_get, settings_get

pytestmark = pytest.mark.django_db
API = ConfigRevision.Source.API


def _put(tenant_id: str, config: dict[str, Any], expected: int | None) -> Tenant:
    return services.tenant_put(
        tenant_id=tenant_id, config=config, expected_version=expected, author=None, source=API
    )


def _patch(expected: int) -> Any:
    return services.tenant_patch(
        tenant_id="t1",
        changes={"max_queriers_per_tenant": 9},
        expected_version=expected,
        author=None,
        source=API,
    )


def _replace(expected: int) -> Any:
    return _put("t1", {"max_queriers_per_tenant": 9}, expected)


def _delete(expected: int) -> Any:
    return services.tenant_delete(
        tenant_id="t1", expected_version=expected, author=None, source=API
    )


WRITES: dict[str, Callable[[int], Any]] = {"patch": _patch, "put": _replace, "delete": _delete}


@pytest.fixture
def tenant_at_version_3() -> Tenant:
    """t1 last changed at version 3, between an older and a newer global version."""
    _put("other", {"max_queriers_per_tenant": 1}, None)  # version 1
    _put("t1", {"max_queriers_per_tenant": 2}, None)  # version 2
    tenant = _put("t1", {"max_queriers_per_tenant": 3}, 2)  # version 3
    _put("other", {"max_queriers_per_tenant": 4}, 1)  # version 4
    assert (tenant.version, config_version_get()) == (3, 4)
    return tenant


@pytest.mark.parametrize("write", sorted(WRITES))
@pytest.mark.parametrize("stale", [2, 4], ids=["older", "newer"])
def test_a_stale_expected_version_older_or_newer_is_a_conflict_and_writes_nothing(
    tenant_at_version_3: Tenant, write: str, stale: int
) -> None:
    with pytest.raises(VersionConflict) as caught:
        WRITES[write](stale)
    assert caught.value.current_version == 3
    tenant = Tenant.objects.get(tenant_id="t1")
    assert (tenant.version, tenant.config) == (3, {"max_queriers_per_tenant": 3})
    assert config_version_get() == 4


@pytest.mark.parametrize("write", sorted(WRITES))
def test_the_current_expected_version_is_accepted(tenant_at_version_3: Tenant, write: str) -> None:
    WRITES[write](3)
    assert config_version_get() == 5


def test_settings_are_updated_with_their_own_etag_after_tenant_writes() -> None:
    first = services.settings_update(
        changes={"layout": "component-first"}, expected_version=None, author=None, source=API
    )
    _put("t1", {"max_queriers_per_tenant": 1}, None)
    _put("t2", {"max_queriers_per_tenant": 1}, None)
    assert (first.version, config_version_get()) == (1, 3)
    row = services.settings_update(
        changes={"layout": "tenant-first"}, expected_version=1, author=None, source=API
    )
    assert (row.version, row.config["layout"]) == (4, "tenant-first")


@pytest.mark.parametrize("stale", [0, 3], ids=["older", "the-global-version"])
def test_settings_compare_against_their_own_version_not_the_global_one(stale: int) -> None:
    services.settings_update(
        changes={"layout": "component-first"}, expected_version=None, author=None, source=API
    )
    _put("t1", {"max_queriers_per_tenant": 1}, None)
    _put("t2", {"max_queriers_per_tenant": 1}, None)
    with pytest.raises(VersionConflict) as caught:
        services.settings_update(
            changes={"layout": "tenant-first"}, expected_version=stale, author=None, source=API
        )
    assert caught.value.current_version == 1
    assert settings_get().config["layout"] == "component-first"
