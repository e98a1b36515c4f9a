import copy
import math
from typing import Any

import pytest
from django.contrib.auth.models import User

from api.store import services
from api.store.config_yaml import parse_tenant_block, tenant_block_yaml
from api.store.exceptions import ConfigValidationError, NotFound, VersionConflict
from api.store.models import ConfigRevision, Tenant
from api.store.selectors import config_version_get

pytestmark = pytest.mark.django_db
API = ConfigRevision.Source.API


def put(tenant_id: str, config: dict[str, Any], expected: int | None, author: Any = None) -> Tenant:
    return services.tenant_put(
        tenant_id=tenant_id, config=config, expected_version=expected, author=author, source=API
    )


def test_creating_a_tenant_records_a_revision_with_no_before(
    editor: User, rules: dict[str, Any]
) -> None:
    tenant = put("t1", rules, None, editor)
    revision = ConfigRevision.objects.get()
    assert tenant.config == rules
    assert (revision.kind, revision.key, revision.before, revision.after) == (
        "tenant",
        "t1",
        None,
        rules,
    )
    assert (revision.author, revision.author_name, revision.source) == (editor, "erin", "api")
    assert tenant.version == revision.version == config_version_get() == 1


def test_replacing_a_tenant_records_before_and_after_and_bumps_the_version(
    rules: dict[str, Any],
) -> None:
    first = put("t1", rules, None)
    changed = copy.deepcopy(rules) | {"max_queriers_per_tenant": 7}
    second = put("t1", changed, first.version)
    revision = ConfigRevision.objects.order_by("-version").first()
    assert revision is not None
    assert (revision.before, revision.after) == (rules, changed)
    assert second.version == 2 == config_version_get()


def test_an_invalid_config_is_rejected_with_field_paths_and_writes_nothing(
    rules: dict[str, Any],
) -> None:
    put("t1", rules, None)
    bad = copy.deepcopy(rules)
    bad["query_priority"]["priorities"][0]["query_attributes"][0]["regex"] = "(unclosed"
    with pytest.raises(ConfigValidationError) as caught:
        put("t1", bad, 1)
    assert [e.path for e in caught.value.errors] == [
        "query_priority.priorities[0].query_attributes[0].regex"
    ]
    assert Tenant.objects.get().config == rules
    assert ConfigRevision.objects.count() == 1
    assert config_version_get() == 1


def test_an_invalid_tenant_id_is_rejected_before_anything_is_written(
    rules: dict[str, Any],
) -> None:
    with pytest.raises(ConfigValidationError) as caught:
        put("bad tenant/id", rules, None)
    assert caught.value.errors[0].path == "tenant_id"
    assert not Tenant.objects.exists()


def test_creating_a_tenant_that_exists_is_a_version_conflict(rules: dict[str, Any]) -> None:
    put("t1", rules, None)
    with pytest.raises(VersionConflict) as caught:
        put("t1", rules | {"max_queriers_per_tenant": 1}, None)
    assert caught.value.current_version == 1


def test_a_stale_expected_version_is_a_conflict_and_changes_nothing(
    rules: dict[str, Any],
) -> None:
    put("t1", rules, None)
    put("t1", rules | {"max_queriers_per_tenant": 1}, 1)
    with pytest.raises(VersionConflict) as caught:
        put("t1", rules | {"max_queriers_per_tenant": 9}, 1)
    assert caught.value.current_version == 2
    assert Tenant.objects.get().config["max_queriers_per_tenant"] == 1


def test_expecting_a_version_of_a_missing_tenant_is_a_conflict(rules: dict[str, Any]) -> None:
    with pytest.raises(VersionConflict) as caught:
        put("ghost", rules, 3)
    assert caught.value.current_version is None


def test_an_unchanged_put_writes_no_revision(rules: dict[str, Any]) -> None:
    put("t1", rules, None)
    put("t1", copy.deepcopy(rules), 1)
    assert ConfigRevision.objects.count() == 1


def test_patch_merges_nested_fields_and_null_removes_one(rules: dict[str, Any]) -> None:
    put("t1", rules | {"max_outstanding_requests_per_tenant": 10}, None)
    tenant = services.tenant_patch(
        tenant_id="t1",
        changes={
            "max_outstanding_requests_per_tenant": None,
            "query_priority": {"default_priority": 4},
        },
        expected_version=1,
        author=None,
        source=API,
    )
    assert "max_outstanding_requests_per_tenant" not in tenant.config
    assert tenant.config["query_priority"]["default_priority"] == 4
    assert tenant.config["query_priority"]["priorities"] == rules["query_priority"]["priorities"]


def test_patch_that_makes_the_config_invalid_is_rejected(rules: dict[str, Any]) -> None:
    put("t1", rules, None)
    with pytest.raises(ConfigValidationError) as caught:
        services.tenant_patch(
            tenant_id="t1",
            changes={"max_queriers_per_tenant": -1},
            expected_version=None,
            author=None,
            source=API,
        )
    assert caught.value.errors[0].path == "max_queriers_per_tenant"
    assert Tenant.objects.get().config == rules


def test_patching_a_missing_tenant_is_not_found() -> None:
    with pytest.raises(NotFound):
        services.tenant_patch(
            tenant_id="ghost", changes={}, expected_version=None, author=None, source=API
        )


def test_delete_records_a_revision_with_no_after(rules: dict[str, Any]) -> None:
    put("t1", rules, None)
    services.tenant_delete(tenant_id="t1", expected_version=1, author=None, source=API)
    revision = ConfigRevision.objects.order_by("-version").first()
    assert revision is not None
    assert (revision.before, revision.after, revision.version) == (rules, None, 2)
    assert not Tenant.objects.exists()


def test_delete_with_a_stale_version_keeps_the_tenant(rules: dict[str, Any]) -> None:
    put("t1", rules, None)
    with pytest.raises(VersionConflict):
        services.tenant_delete(tenant_id="t1", expected_version=7, author=None, source=API)
    assert Tenant.objects.exists()


def test_a_re_created_tenant_never_reuses_an_old_version(rules: dict[str, Any]) -> None:
    put("t1", rules, None)
    services.tenant_delete(tenant_id="t1", expected_version=None, author=None, source=API)
    assert put("t1", rules, None).version == 3


def test_a_pasted_yaml_block_with_negative_zero_is_saved_and_shown_as_zero() -> None:
    """The YAML editor's save: the block read back, then `tenant_put`."""
    draft = parse_tenant_block("t1:\n  max_query_capacity: -0.0\n")
    assert draft.ok and draft.config is not None
    tenant = put("t1", draft.config, None)
    stored = Tenant.objects.get(pk=tenant.pk).config["max_query_capacity"]
    assert stored == 0.0 and math.copysign(1, stored) == 1
    assert tenant_block_yaml("t1", tenant.config) == "t1:\n  max_query_capacity: 0.0\n"
