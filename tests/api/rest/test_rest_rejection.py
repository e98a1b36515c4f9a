"""`query_rejection` through the REST tenant body, runtime-config YAML and rollback."""

from __future__ import annotations

import yaml

CORTEX_FILE = """
overrides:
  user-1:
    query_rejection:
      enabled: true
      query_attributes:
        - api_type: query
          regex: .*rate.*
          query_step_limit: {min: 6s, max: 20m}
          dashboard_uid: dash123
"""
TENANT = "/api/v1/tenants/user-1/"


def test_cortexs_rejection_example_imports_and_exports_unchanged(editor_api) -> None:
    response = editor_api.put(
        "/api/v1/runtime-config/",
        CORTEX_FILE,
        content_type="application/yaml",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["created"] == ["user-1"] and body["ignored"] == {}
    exported = yaml.safe_load(editor_api.get("/api/v1/runtime-config/").content)
    assert exported == yaml.safe_load(CORTEX_FILE)


def test_a_bad_rejection_attribute_is_refused_with_its_path_and_nothing_changes(
    editor_api,
) -> None:
    block = {"query_rejection": {"enabled": True, "query_attributes": [{"api_type": "nope"}]}}
    response = editor_api.put(TENANT, block, format="json")
    assert response.status_code == 400
    errors = response.json()["query_rejection"]["query_attributes"]["0"]["api_type"]
    assert "unknown api_type" in errors[0]
    assert editor_api.get(TENANT).status_code == 404


def test_rolling_back_restores_the_rejection_rules(editor_api) -> None:
    rules = {"query_rejection": {"enabled": True, "query_attributes": [{"regex": "expensive"}]}}
    assert editor_api.put(TENANT, rules, format="json").status_code == 201
    etag = editor_api.get(TENANT)["ETag"]
    changed = editor_api.put(TENANT, {}, format="json", HTTP_IF_MATCH=etag)
    assert changed.status_code == 200 and "query_rejection" not in changed.json()
    newest = editor_api.get("/api/v1/revisions/", {"limit": 1}).json()["results"][0]
    assert editor_api.post(f"/api/v1/revisions/{newest['id']}/rollback/").status_code == 201
    assert editor_api.get(TENANT).json() == rules


def test_explain_says_which_rejection_attribute_rejects(editor_api) -> None:
    rules = {
        "query_rejection": {
            "enabled": True,
            "query_attributes": [{"regex": "never"}, {"regex": "rate"}],
        }
    }
    editor_api.put(TENANT, rules, format="json")
    body = editor_api.post(
        "/api/v1/explain/",
        {"tenant": "user-1", "query": "rate(x[5m])", "now": 1_700_000_000},
        format="json",
    ).json()
    assert body["rejected_by"] == 1
    assert any(r["matched"] for r in body["rejection_reasons"] if r["attribute_index"] == 1)
