"""`config_changes_since`: the revisions after a version name what to read again."""

from __future__ import annotations

from typing import Any

import pytest

from api.store import config_delta, services
from api.store.config_delta import config_changes_since
from api.store.models import ConfigRevision
from api.store.selectors import config_version_get
from scheduler_core.model import TenantLimits

pytestmark = pytest.mark.django_db
CLI = ConfigRevision.Source.CLI


def put(tenant_id: str, config: dict[str, Any], expected: int | None = None) -> Any:
    return services.tenant_put(
        tenant_id=tenant_id, config=config, expected_version=expected, author=None, source=CLI
    )


def test_a_one_tenant_write_is_a_delta_of_that_tenant_alone(django_assert_num_queries) -> None:
    for n in range(50):
        put(f"t{n}", {"max_queriers_per_tenant": 1})
    applied = config_version_get()
    put("t7", {"max_queriers_per_tenant": 3}, expected=7 + 1)
    # The version, the revisions since, and one tenant row: not fifty.
    with django_assert_num_queries(3):
        current, delta = config_changes_since(applied)
    assert current == applied + 1
    assert delta is not None and delta.version == current
    assert delta.tenants == {"t7": TenantLimits(max_queriers=3)}
    assert delta.queue_config is None


def test_a_deleted_tenant_is_in_the_delta_as_gone() -> None:
    tenant = put("gone", {"max_queriers_per_tenant": 2})
    services.tenant_delete(
        tenant_id="gone", expected_version=tenant.version, author=None, source=CLI
    )
    _, delta = config_changes_since(tenant.version)
    assert delta is not None and delta.tenants == {"gone": None}


def test_several_writes_since_the_applied_version_are_all_in_the_delta() -> None:
    put("a", {"max_queriers_per_tenant": 1})
    put("b", {"max_queriers_per_tenant": 1})
    put("a", {"max_queriers_per_tenant": 4}, expected=1)
    services.settings_update(
        changes={"layout": "component-first"}, expected_version=None, author=None, source=CLI
    )
    current, delta = config_changes_since(1)
    assert current == 4 and delta is not None
    assert delta.tenants == {"a": TenantLimits(max_queriers=4), "b": TenantLimits(max_queriers=1)}
    assert delta.queue_config is not None and delta.queue_config.layout == "component-first"


def test_nothing_new_is_an_empty_delta() -> None:
    put("a", {"max_queriers_per_tenant": 1})
    current, delta = config_changes_since(1)
    assert (current, delta is not None and delta.tenants) == (1, {})


@pytest.mark.parametrize("applied", [-1, 5], ids=["nothing-applied", "ahead-of-the-database"])
def test_no_applied_version_or_one_ahead_of_the_database_needs_a_full_reload(applied) -> None:
    put("a", {"max_queriers_per_tenant": 1})
    assert config_changes_since(applied) == (1, None)


def test_an_import_in_between_needs_a_full_reload() -> None:
    put("a", {"max_queriers_per_tenant": 1})
    services.runtime_config_import(overrides={"b": {"max_queriers_per_tenant": 1}}, author=None)
    assert config_changes_since(1) == (2, None)


def test_a_gap_in_the_revisions_needs_a_full_reload() -> None:
    for n in range(3):
        put(f"t{n}", {"max_queriers_per_tenant": 1})
    ConfigRevision.objects.filter(version=2).delete()
    assert config_changes_since(1) == (3, None)


def test_too_many_revisions_since_need_a_full_reload(monkeypatch) -> None:
    monkeypatch.setattr(config_delta, "MAX_DELTA_REVISIONS", 2)
    for n in range(4):
        put(f"t{n}", {"max_queriers_per_tenant": 1})
    assert config_changes_since(1) == (4, None)
    assert config_changes_since(2)[1] is not None


def test_a_stored_block_that_no_longer_validates_counts_as_gone() -> None:
    from api.store.models import Tenant

    put("bad", {"max_queriers_per_tenant": 1})
    Tenant.objects.filter(tenant_id="bad").update(config={"max_queriers_per_tenant": -5})
    limits, invalid = config_delta.tenant_limits_of(["bad", "missing"])
    assert limits == {"bad": None, "missing": None} and invalid == {"bad"}
