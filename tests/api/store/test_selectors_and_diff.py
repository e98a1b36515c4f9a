from typing import Any

import pytest

from api.store import selectors, services
from api.store.diff import Change, structural_diff
from api.store.exceptions import NotFound
from api.store.models import ConfigRevision, Tenant
from scheduler_core.model import QueueConfig

API = ConfigRevision.Source.API


def put(tenant_id: str, config: dict[str, Any]) -> Tenant:
    return services.tenant_put(
        tenant_id=tenant_id, config=config, expected_version=None, author=None, source=API
    )


def test_diff_reports_one_line_per_changed_leaf_in_document_order() -> None:
    before = {"a": 1, "q": {"p": [{"x": 1}, {"x": 2}]}, "gone": True}
    after = {"a": 1, "q": {"p": [{"x": 1}, {"x": 3}, {"x": 4}]}, "new": "n"}
    assert structural_diff(before, after) == [
        Change("q.p[1].x", 2, 3),
        Change("q.p[2]", None, {"x": 4}),
        Change("gone", True, None),
        Change("new", None, "n"),
    ]


def test_diff_of_equal_values_is_empty_but_a_type_change_is_not() -> None:
    assert structural_diff({"a": [1, {"b": None}]}, {"a": [1, {"b": None}]}) == []
    assert structural_diff({"a": 1}, {"a": 1.0}) == [Change("a", 1, 1.0)]
    assert structural_diff(1, "1") == [Change("(root)", 1, "1")]


@pytest.mark.django_db
def test_tenant_get_and_list_with_search(rules: dict[str, Any]) -> None:
    for tenant_id in ("alpha", "beta", "alphabet"):
        put(tenant_id, rules)
    assert selectors.tenant_get(tenant_id="beta").config == rules
    assert [t.tenant_id for t in selectors.tenant_list(search="ALPHA")] == ["alpha", "alphabet"]
    assert selectors.tenant_list().count() == 3
    with pytest.raises(NotFound):
        selectors.tenant_get(tenant_id="gamma")


@pytest.mark.django_db
def test_tenant_limits_all_builds_scheduler_values(rules: dict[str, Any]) -> None:
    put("t1", rules)
    put("t2", {})
    limits = selectors.tenant_limits_all()
    assert limits["t1"].max_queriers == 3
    assert limits["t1"].query_priority.priorities[0].reserved_queriers == 1
    assert limits["t2"].query_priority.enabled is False


@pytest.mark.django_db
def test_a_stored_tenant_that_no_longer_validates_is_left_out(rules: dict[str, Any]) -> None:
    put("good", rules)
    Tenant.objects.create(tenant_id="stale", config={"removed_field": 1})
    assert set(selectors.tenant_limits_all()) == {"good"}


@pytest.mark.django_db
def test_queue_config_and_version_before_any_change_are_the_defaults() -> None:
    assert selectors.queue_config_get() == QueueConfig()
    assert selectors.config_version_get() == 0


@pytest.mark.django_db
def test_revision_list_filters_and_revision_diff_lists_created_fields(
    rules: dict[str, Any],
) -> None:
    put("t1", {"max_queriers_per_tenant": 2})
    put("t2", rules)
    services.settings_update(
        changes={"layout": "component-first"}, expected_version=None, author=None, source=API
    )
    assert [r.version for r in selectors.revision_list()] == [3, 2, 1]
    assert [r.key for r in selectors.revision_list(kind="tenant")] == ["t2", "t1"]
    assert [r.version for r in selectors.revision_list(key="t1")] == [1]
    assert [r.version for r in selectors.revision_list(since_version=1)] == [3, 2]
    first = selectors.revision_get(revision_id=selectors.revision_list(key="t1")[0].pk)
    assert selectors.revision_diff(first) == [Change("max_queriers_per_tenant", None, 2)]
    with pytest.raises(NotFound):
        selectors.revision_get(revision_id=12345)


@pytest.mark.django_db
def test_runtime_config_export_round_trips_through_import(rules: dict[str, Any]) -> None:
    put("b", rules)
    put("a", {"max_queriers_per_tenant": 1})
    exported = selectors.runtime_config_export()
    assert list(exported) == ["a", "b"]
    result = services.runtime_config_import(overrides=exported, author=None)
    assert not result.has_changes
