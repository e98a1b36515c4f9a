import copy
from typing import Any

import pytest
import yaml

from api.store import services, services_import
from api.store.diff import Change
from api.store.exceptions import ConfigValidationError, NotFound
from api.store.models import ConfigRevision, Tenant
from api.store.selectors import config_version_get, queue_config_get, runtime_config_export
from api.store.yaml_keys import strict_keys_loader

pytestmark = pytest.mark.django_db
API = ConfigRevision.Source.API


def put(tenant_id: str, config: dict[str, Any]) -> Tenant:
    return services.tenant_put(
        tenant_id=tenant_id, config=config, expected_version=None, author=None, source=API
    )


def import_(overrides: dict[Any, Any], dry_run: bool = False) -> services.ImportResult:
    return services.runtime_config_import(overrides=overrides, author=None, dry_run=dry_run)


def test_import_creates_changes_deletes_and_reports_unchanged(rules: dict[str, Any]) -> None:
    put("keep", rules)
    put("change", rules)
    put("gone", rules)
    result = import_(
        {"keep": rules, "change": rules | {"max_queriers_per_tenant": 1}, "new": {}},
    )
    assert (result.created, result.changed, result.deleted, result.unchanged) == (
        ["new"],
        ["change"],
        ["gone"],
        ["keep"],
    )
    assert result.diffs["change"] == [Change("max_queriers_per_tenant", 3, 1)]
    assert set(runtime_config_export()) == {"keep", "change", "new"}
    revision = ConfigRevision.objects.get(pk=result.revision_id)
    assert revision.kind == "runtime-config"
    assert set(revision.before) == {"keep", "change", "gone"}
    assert result.version == config_version_get() == Tenant.objects.get(tenant_id="new").version


def test_import_drops_and_lists_fields_the_scheduler_does_not_use(rules: dict[str, Any]) -> None:
    result = import_({"t1": rules | {"ingestion_rate": 5, "max_series": 1}})
    assert result.ignored == {"t1": ["ingestion_rate", "max_series"]}
    assert runtime_config_export() == {"t1": rules}


def test_import_keeps_numeric_tenant_ids_as_written_as_cortex_reads_them() -> None:
    loader = strict_keys_loader(yaml.SafeLoader)
    import_(yaml.load("123: {max_queriers_per_tenant: 2}\n0123: {}\n", Loader=loader))  # noqa: S506
    assert runtime_config_export() == {"0123": {}, "123": {"max_queriers_per_tenant": 2}}


def test_import_refuses_a_tenant_id_that_is_not_text() -> None:
    with pytest.raises(ConfigValidationError) as caught:
        import_({123: {}})
    assert [(e.path, e.message) for e in caught.value.errors] == [
        ("overrides.123", "must be a non-empty string")
    ]


def test_a_misspelt_field_fails_the_import_where_another_cortex_limit_is_ignored(
    rules: dict[str, Any],
) -> None:
    """Ignored, `query_priorty` imported the tenant without any of its rules."""
    with pytest.raises(ConfigValidationError) as caught:
        import_({"t": {"query_priorty": rules["query_priority"], "ingestion_rate": 5}})
    assert [(e.path, e.message) for e in caught.value.errors] == [
        ("overrides.t.query_priorty", "unknown field; did you mean query_priority?")
    ]
    assert import_({"t": {"ingestion_rate": 5}}).ignored == {"t": ["ingestion_rate"]}


def test_one_invalid_tenant_rejects_the_whole_import(rules: dict[str, Any]) -> None:
    put("old", rules)
    bad = copy.deepcopy(rules)
    bad["query_priority"]["priorities"][0]["priority"] = "high"
    with pytest.raises(ConfigValidationError) as caught:
        import_({"fine": rules, "broken": bad, "bad id!": {}, "worse": [1]})
    assert {e.path for e in caught.value.errors} == {
        "overrides.broken.query_priority.priorities[0].priority",
        "overrides.bad id!",
        "overrides.worse",
    }
    assert runtime_config_export() == {"old": rules}
    assert ConfigRevision.objects.count() == 1


def test_a_dry_run_reports_the_plan_and_writes_nothing(rules: dict[str, Any]) -> None:
    put("old", rules)
    result = import_({"new": rules}, dry_run=True)
    assert (result.created, result.deleted, result.version) == (["new"], ["old"], None)
    assert runtime_config_export() == {"old": rules}


def test_a_dry_run_takes_no_writers_lock(
    rules: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Held while a whole file was planned, it held up every save on every
    # replica (half a second at 3,000 tenants).
    def no_lock() -> Any:
        raise AssertionError("the writers' lock was taken")

    monkeypatch.setattr(services_import, "lock_settings", no_lock)
    plan = services.runtime_config_import(
        overrides={"t1": rules}, author=None, source="api", dry_run=True, expected_version=0
    )
    assert plan.created == ["t1"] and not Tenant.objects.exists()
    with pytest.raises(AssertionError, match="lock was taken"):
        services.runtime_config_import(overrides={"t1": rules}, author=None, source="api")


def test_an_import_that_changes_nothing_writes_no_revision(rules: dict[str, Any]) -> None:
    put("t1", rules)
    result = import_({"t1": rules})
    assert (result.has_changes, result.version) == (False, None)
    assert ConfigRevision.objects.count() == 1


def test_rolling_back_a_tenant_change_restores_its_before_as_a_new_revision(
    editor: Any, rules: dict[str, Any]
) -> None:
    put("t1", rules)
    changed = services.tenant_put(
        tenant_id="t1",
        config=rules | {"max_queriers_per_tenant": 9},
        expected_version=1,
        author=None,
        source=API,
    )
    target = ConfigRevision.objects.get(version=changed.version)
    new = services.revision_rollback(revision_id=target.pk, author=editor)
    assert new is not None
    assert (new.version, new.source, new.author) == (3, "rollback", editor)
    assert (new.before, new.after) == (target.after, target.before)
    assert "rollback of revision #2" in new.message
    assert Tenant.objects.get().config == rules


def test_rolling_back_a_creation_deletes_the_tenant(rules: dict[str, Any]) -> None:
    put("t1", rules)
    created = ConfigRevision.objects.get()
    new = services.revision_rollback(revision_id=created.pk, author=None)
    assert new is not None and new.after is None
    assert not Tenant.objects.exists()


def test_rolling_back_a_deletion_re_creates_the_tenant(rules: dict[str, Any]) -> None:
    put("t1", rules)
    services.tenant_delete(tenant_id="t1", expected_version=None, author=None, source=API)
    deletion = ConfigRevision.objects.get(version=2)
    services.revision_rollback(revision_id=deletion.pk, author=None)
    assert Tenant.objects.get().config == rules


def test_rolling_back_to_the_current_state_writes_nothing(rules: dict[str, Any]) -> None:
    put("t1", rules)
    services.tenant_delete(tenant_id="t1", expected_version=None, author=None, source=API)
    created = ConfigRevision.objects.get(version=1)
    assert services.revision_rollback(revision_id=created.pk, author=None) is None
    assert config_version_get() == 2


def test_rolling_back_settings_restores_the_old_layout() -> None:
    row = services.settings_update(
        changes={"layout": "component-first"}, expected_version=None, author=None, source=API
    )
    revision = ConfigRevision.objects.get(version=row.version)
    services.revision_rollback(revision_id=revision.pk, author=None)
    assert queue_config_get().layout == "tenant-first"


def test_rolling_back_an_import_restores_the_whole_previous_set(rules: dict[str, Any]) -> None:
    put("a", rules)
    result = import_({"b": rules})
    services.revision_rollback(revision_id=result.revision_id or 0, author=None)
    assert runtime_config_export() == {"a": rules}


def test_rolling_back_an_import_keeps_later_edits_of_tenants_it_did_not_touch(
    rules: dict[str, Any],
) -> None:
    """Only what the import changed goes back: a tenant edited or created after it stays."""
    put("a", rules)
    put("keep", {})
    result = import_({"b": rules, "keep": {}})  # deletes a, creates b, leaves keep alone
    services.tenant_put(
        tenant_id="keep",
        config={"max_queriers_per_tenant": 3},
        expected_version=services.ANY_VERSION,
        author=None,
        source=API,
    )
    put("late", {"max_queriers_per_tenant": 4})

    services.revision_rollback(revision_id=result.revision_id or 0, author=None)

    assert runtime_config_export() == {
        "a": rules,
        "keep": {"max_queriers_per_tenant": 3},
        "late": {"max_queriers_per_tenant": 4},
    }


def test_rolling_back_an_unknown_revision_is_not_found() -> None:
    with pytest.raises(NotFound):
        services.revision_rollback(revision_id=999, author=None)
