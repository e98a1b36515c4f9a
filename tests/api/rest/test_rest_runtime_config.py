"""`runtime-config/`: Cortex runtime-config YAML in and out, dry runs, ignored fields."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from api.store import selectors
from api.store.models import ConfigRevision, Tenant
from scheduler_core.validation import TEXT_FIELDS

URL = "/api/v1/runtime-config/"

# The example configuration of the Cortex query-priority PR (the seed), verbatim.
SEED_EXAMPLE = """
overrides:
  tenant-id:
    query_priority:
      enabled: true
      default_priority: 0
      priorities:
        - priority: 3
          reserved_queriers: 1
          query_attributes:
            - regex: "special_query"
        - priority: 2
          query_attributes:
            - regex: "max"
              time_window:
                start: 2h
                end: 0h
        - priority: 1
          query_attributes:
            - time_window:
                start: 24h
"""

# A production-like Cortex file: other limits per tenant, other top-level
# sections, a numeric tenant ID, a dotted one, every attribute field.
CORTEX_FILE = """
overrides:
  tenant-a:
    ingestion_rate: 350000
    ingestion_burst_size: 3500000
    max_global_series_per_user: 3000000
    max_fetched_chunks_per_query: 2000000
    max_queriers_per_tenant: 4
    max_outstanding_requests_per_tenant: 100
    query_priority:
      enabled: true
      default_priority: 0
      priorities:
        - priority: 3
          reserved_queriers: 1
          query_attributes:
            - regex: "special_query"
        - priority: 2
          query_attributes:
            - regex: "max"
              time_window: {start: 2h, end: 0h}
  12345:
    ingestion_rate: 10000
    max_queriers_per_tenant: 2
  team.payments:
    max_query_length: 721h
    compactor_blocks_retention_period: 90d
    query_priority:
      enabled: true
      default_priority: 1
      priorities:
        - priority: 10
          reserved_queriers: 0.25
          query_attributes:
            - api_type: query_range
              time_range_limit: {min: 1h, max: 24h}
              query_step_limit: {max: 1m}
              user_agent_regex: "^Grafana"
              dashboard_uid: "payments-overview"
              panel_id: 4
            - api_type: series
              regex: "payments_.*"
multi_kv_config:
  mirror_enabled: false
ingester_limits:
  max_inflight_push_requests: 30000
"""

IGNORED = {"ingestion_rate", "ingestion_burst_size", "max_global_series_per_user",
           "max_fetched_chunks_per_query", "max_query_length",
           "compactor_blocks_retention_period"}  # fmt: skip


def _as_cortex_reads(value: Any) -> Any:
    """A `safe_load`ed value with string fields as text: Go reads `panel_id: 4` as "4"."""
    if isinstance(value, dict):
        return {
            k: str(v) if k in TEXT_FIELDS and v is not None else _as_cortex_reads(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_as_cortex_reads(v) for v in value]
    return value


def _expected_export(text: str) -> dict[str, Any]:
    overrides = _as_cortex_reads(yaml.safe_load(text)["overrides"])
    return {
        str(tenant): {k: v for k, v in block.items() if k not in IGNORED}
        for tenant, block in sorted(overrides.items(), key=lambda item: str(item[0]))
    }


CURRENT = "current"


def _put(
    client,
    text: str,
    *,
    media: str = "application/yaml",
    dry_run: bool = False,
    if_match: str | None = CURRENT,
    **headers: str,
):
    """PUT a file; by default with If-Match naming the export's current ETag."""
    url = URL + ("?dry_run=1" if dry_run else "")
    if if_match == CURRENT:
        if_match = client.get(URL)["ETag"]
    if if_match is not None:
        headers["HTTP_IF_MATCH"] = if_match
    return client.put(url, text, content_type=media, **headers)


@pytest.mark.parametrize("text", [SEED_EXAMPLE, CORTEX_FILE], ids=["seed", "cortex"])
def test_a_cortex_file_round_trips_through_the_api(editor_api, text):
    response = _put(editor_api, text)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("application/json")
    exported = editor_api.get(URL)
    assert exported["Content-Type"].startswith("application/yaml")
    assert yaml.safe_load(exported.content) == {"overrides": _expected_export(text)}
    again = _put(editor_api, exported.content.decode())
    assert again.json()["applied"] is False
    assert sorted(again.json()["unchanged"]) == sorted(_expected_export(text))


def test_fields_we_do_not_use_are_reported_not_dropped_silently(editor_api):
    body = _put(editor_api, CORTEX_FILE).json()
    assert body["ignored"] == {
        "tenant-a": sorted(
            ["ingestion_rate", "ingestion_burst_size", "max_global_series_per_user",
             "max_fetched_chunks_per_query"]
        ),
        "12345": ["ingestion_rate"],
        "team.payments": ["compactor_blocks_retention_period", "max_query_length"],
    }  # fmt: skip
    assert body["ignored_top_level"] == ["ingester_limits", "multi_kv_config"]
    assert body["created"] == ["12345", "team.payments", "tenant-a"]
    assert body["applied"] is True and body["version"] and body["revision_id"]


def test_a_dry_run_shows_the_diff_and_changes_nothing(editor_api):
    _put(editor_api, SEED_EXAMPLE)
    revisions = ConfigRevision.objects.count()
    changed = (
        SEED_EXAMPLE.replace("special_query", "vip_query")
        + "  other:\n    max_queriers_per_tenant: 1\n"
    )
    body = _put(editor_api, changed, dry_run=True).json()
    assert body["dry_run"] is True and body["applied"] is False
    assert body["changed"] == ["tenant-id"] and body["created"] == ["other"]
    assert body["diffs"]["tenant-id"] == [
        {
            "path": "query_priority.priorities[0].query_attributes[0].regex",
            "before": "special_query",
            "after": "vip_query",
        }
    ]
    assert body["version"] is None
    assert ConfigRevision.objects.count() == revisions
    assert not Tenant.objects.filter(tenant_id="other").exists()


def test_tenants_missing_from_the_file_are_deleted(editor_api):
    _put(editor_api, CORTEX_FILE)
    body = _put(editor_api, SEED_EXAMPLE).json()
    assert body["deleted"] == ["12345", "team.payments", "tenant-a"]
    assert list(Tenant.objects.values_list("tenant_id", flat=True)) == ["tenant-id"]


def test_one_bad_tenant_rejects_the_whole_file_with_its_path(editor_api):
    bad = CORTEX_FILE.replace('"^Grafana"', '"^Grafana("')
    response = _put(editor_api, bad)
    assert response.status_code == 400
    errors = response.json()
    attr = errors["overrides"]["team.payments"]["query_priority"]["priorities"]["0"]
    assert "RE2" in attr["query_attributes"]["0"]["user_agent_regex"][0]
    assert not Tenant.objects.exists()


def test_a_file_without_overrides_is_refused_rather_than_deleting_everything(editor_api):
    _put(editor_api, SEED_EXAMPLE)
    response = _put(editor_api, "multi_kv_config: {}\n")
    assert response.status_code == 400
    assert "required" in response.json()["overrides"][0]
    assert Tenant.objects.count() == 1
    assert _put(editor_api, "overrides:\n").json()["deleted"] == ["tenant-id"]


@pytest.mark.parametrize("media", ["text/yaml", "application/x-yaml", "application/json"])
def test_other_yaml_media_types_and_json_are_accepted(editor_api, media):
    text = SEED_EXAMPLE
    if media == "application/json":
        text = json.dumps(yaml.safe_load(SEED_EXAMPLE))
    response = _put(editor_api, text, media=media)
    assert response.status_code == 200
    assert response.json()["created"] == ["tenant-id"]


def test_the_export_is_json_when_asked(editor_api):
    _put(editor_api, SEED_EXAMPLE)
    response = editor_api.get(URL, HTTP_ACCEPT="application/json")
    assert response.json() == {"overrides": _expected_export(SEED_EXAMPLE)}


def test_broken_yaml_and_alias_bombs_are_400(editor_api):
    assert _put(editor_api, "overrides: [unclosed").status_code == 400
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 9):
        previous, name = chr(ord("a") + level - 1), chr(ord("a") + level)
        bomb.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 10) + "]")
    bomb.append("overrides: {t: {ingestion_rate: *i}}")
    response = _put(editor_api, "\n".join(bomb))
    assert response.status_code == 400
    assert "aliases" in response.json()["detail"]


def test_a_rejected_import_keeps_what_was_there(editor_api):
    _put(editor_api, SEED_EXAMPLE)
    before = copy.deepcopy(editor_api.get(URL).content)
    assert (
        _put(editor_api, "overrides:\n  x:\n    max_queriers_per_tenant: -1\n").status_code == 400
    )
    assert editor_api.get(URL).content == before


def test_a_reimport_updates_changed_rows_in_place_and_keeps_the_rest(editor_api):
    _put(editor_api, CORTEX_FILE)
    before = {t.tenant_id: t for t in Tenant.objects.all()}
    changed = CORTEX_FILE.replace("max_queriers_per_tenant: 2", "max_queriers_per_tenant: 3")
    body = _put(editor_api, changed).json()
    assert body["changed"] == ["12345"] and body["unchanged"] == ["team.payments", "tenant-a"]
    after = {t.tenant_id: t for t in Tenant.objects.all()}
    row = after["12345"]
    assert (row.pk, row.created_at) == (before["12345"].pk, before["12345"].created_at)
    assert row.config["max_queriers_per_tenant"] == 3 and row.version == body["version"]
    assert row.updated_at > before["12345"].updated_at
    assert after["tenant-a"].version == before["tenant-a"].version


# --- If-Match, as for a tenant write ------------------------------------------------

ONE = "overrides:\n  a:\n    max_queriers_per_tenant: 1\n"
TWO = "overrides:\n  a:\n    max_queriers_per_tenant: 2\n"


def test_an_import_into_an_empty_store_needs_no_if_match(editor_api):
    response = _put(editor_api, ONE, if_match=None)
    assert response.status_code == 200, response.content
    assert response.json()["created"] == ["a"]


def test_an_import_over_existing_tenants_without_if_match_is_428_and_changes_nothing(editor_api):
    _put(editor_api, ONE, if_match=None)
    response = _put(editor_api, TWO, if_match=None)
    assert response.status_code == 428
    assert "If-Match" in response.json()["detail"]
    assert Tenant.objects.get().config == {"max_queriers_per_tenant": 1}


def test_a_stale_if_match_is_412_with_the_current_etag_and_changes_nothing(editor_api):
    _put(editor_api, ONE, if_match=None)
    stale = editor_api.get(URL)["ETag"]
    editor_api.put(
        "/api/v1/tenants/b/", {"max_queriers_per_tenant": 5}, format="json"
    )  # a concurrent edit
    current = editor_api.get(URL)["ETag"]
    assert current != stale
    response = _put(editor_api, TWO, if_match=stale)
    assert response.status_code == 412
    assert response["ETag"] == current
    assert Tenant.objects.get(tenant_id="a").config == {"max_queriers_per_tenant": 1}
    assert Tenant.objects.filter(tenant_id="b").exists()


def test_an_export_overtaken_by_a_write_answers_the_etag_of_the_tenants_it_lists(
    editor_api, monkeypatch
):
    _put(editor_api, ONE, if_match=None)
    real = selectors.runtime_config_export
    writes = [{"max_queriers_per_tenant": 5}]

    def overtaken() -> Any:
        export = real()
        if writes:  # another client's edit commits after this read
            editor_api.put("/api/v1/tenants/b/", writes.pop(), format="json")
        return export

    monkeypatch.setattr(selectors, "runtime_config_export", overtaken)
    response = editor_api.get(URL)
    assert not writes  # the edit landed during the export
    assert "b" in yaml.safe_load(response.content)["overrides"]
    assert response["ETag"] == editor_api.get(URL)["ETag"]


def test_the_current_etag_and_a_star_are_accepted(editor_api):
    _put(editor_api, ONE, if_match=None)
    assert _put(editor_api, TWO).status_code == 200
    assert _put(editor_api, ONE, if_match="*").status_code == 200
    assert Tenant.objects.get().config == {"max_queriers_per_tenant": 1}


def test_if_none_match_star_imports_only_into_an_empty_store(editor_api):
    assert _put(editor_api, ONE, if_match=None, HTTP_IF_NONE_MATCH="*").status_code == 200
    response = _put(editor_api, TWO, if_match=None, HTTP_IF_NONE_MATCH="*")
    assert response.status_code == 412
    assert Tenant.objects.get().config == {"max_queriers_per_tenant": 1}


def test_a_settings_change_leaves_the_exports_etag_valid(editor_api):
    _put(editor_api, ONE, if_match=None)
    etag = editor_api.get(URL)["ETag"]
    settings_etag = editor_api.get("/api/v1/settings/")["ETag"]
    patched = editor_api.patch(
        "/api/v1/settings/", {"layout": "component-first"}, format="json",
        HTTP_IF_MATCH=settings_etag,
    )  # fmt: skip
    assert patched.status_code == 200
    assert editor_api.get(URL)["ETag"] == etag
    assert _put(editor_api, TWO, if_match=etag).status_code == 200


def test_a_dry_run_needs_no_if_match_but_a_stale_one_is_still_412(editor_api):
    _put(editor_api, ONE, if_match=None)
    assert _put(editor_api, TWO, if_match=None, dry_run=True).status_code == 200
    assert _put(editor_api, TWO, if_match='"999"', dry_run=True).status_code == 412


def test_the_export_answers_304_to_its_own_etag(editor_api):
    _put(editor_api, ONE, if_match=None)
    etag = editor_api.get(URL)["ETag"]
    response = editor_api.get(URL, HTTP_IF_NONE_MATCH=etag)
    assert response.status_code == 304 and response["ETag"] == etag


def test_the_service_rechecks_the_version_inside_its_transaction(editor_api):
    # Two writers that both passed the view's check: the second must lose.
    from api.store import services
    from api.store.exceptions import VersionConflict

    _put(editor_api, ONE, if_match=None)
    version = int(editor_api.get(URL)["ETag"].strip('"'))
    services.runtime_config_import(
        overrides={"a": {"max_queriers_per_tenant": 2}}, author=None, expected_version=version
    )
    with pytest.raises(VersionConflict):
        services.runtime_config_import(
            overrides={"a": {"max_queriers_per_tenant": 3}}, author=None, expected_version=version
        )
    with pytest.raises(VersionConflict):
        services.runtime_config_import(overrides={}, author=None, require_empty=True)
    assert Tenant.objects.get().config == {"max_queriers_per_tenant": 2}


def test_a_bad_file_is_400_even_when_the_preconditions_are_unmet(editor_api):
    _put(editor_api, ONE, if_match=None)
    bad = "overrides:\n  a:\n    max_queriers_per_tenant: -1\n"
    assert _put(editor_api, bad, if_match=None).status_code == 400  # not 428
    assert _put(editor_api, bad, if_match='"999"').status_code == 400  # not 412
    assert _put(editor_api, TWO, if_match='"999"').status_code == 412
    assert Tenant.objects.get().config == {"max_queriers_per_tenant": 1}


REGEX_PATH = "overrides.team-a.query_priority.priorities[0].query_attributes[0].regex"


@pytest.mark.parametrize(
    ("media", "escape", "reason"),
    [
        ("application/yaml", "\\0", "NUL"),
        ("application/json", "\\u0000", "NUL"),
        ("application/json", "\\ud800", "lone surrogate"),
    ],
)
def test_text_no_store_can_keep_is_refused_naming_where_it_is(editor_api, media, escape, reason):
    block = '{"query_priority": {"enabled": true, "priorities": [{"priority": 1, '
    block += '"query_attributes": [{"regex": "a' + escape + '"}]}]}}'
    body = '{"overrides": {"team-b": {}, "team-a": ' + block + "}}"
    response = _put(editor_api, body, media=media)
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert reason in detail
    assert detail.endswith(f"(at {REGEX_PATH})")
    assert not Tenant.objects.exists()


def test_a_refused_tenant_id_is_named_by_its_parent(editor_api):
    response = _put(editor_api, '{"overrides": {"a\\u0000b": {}}}', media="application/json")
    assert response.status_code == 400
    assert response.json()["detail"].endswith("(at a key of overrides)")
