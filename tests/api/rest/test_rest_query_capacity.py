"""Loki's `max_query_capacity` through the REST API: tenant body, YAML, validation, explain."""

from __future__ import annotations

import yaml

from api.store.models import Tenant

TENANT = "/api/v1/tenants/loki-team/"
RUNTIME_CONFIG = "/api/v1/runtime-config/"


def test_a_tenant_body_carries_max_query_capacity(editor_api):
    response = editor_api.put(TENANT, {"max_query_capacity": 0.25}, format="json")
    assert response.status_code in (200, 201), response.content
    assert editor_api.get(TENANT).json()["max_query_capacity"] == 0.25


def test_a_capacity_above_one_is_refused_with_its_field_and_nothing_is_saved(editor_api):
    response = editor_api.put(TENANT, {"max_query_capacity": 2}, format="json")
    assert response.status_code == 400
    assert "at most 1" in response.json()["max_query_capacity"][0]
    assert not Tenant.objects.filter(tenant_id="loki-team").exists()


def test_runtime_config_yaml_uses_lokis_field_name(editor_api):
    text = "overrides:\n  loki-team:\n    max_query_capacity: 0.5\n    max_queriers_per_tenant: 4\n"
    etag = editor_api.get(RUNTIME_CONFIG)["ETag"]
    response = editor_api.put(
        RUNTIME_CONFIG, text, content_type="application/yaml", HTTP_IF_MATCH=etag
    )
    assert response.status_code == 200, response.content
    assert "loki-team" not in response.json()["ignored"]
    exported = yaml.safe_load(editor_api.get(RUNTIME_CONFIG).content)
    assert exported["overrides"]["loki-team"]["max_query_capacity"] == 0.5


def test_explain_says_how_many_queriers_the_tenant_may_use(editor_api):
    draft = {"max_query_capacity": 0.25}
    response = editor_api.post(
        "/api/v1/explain/",
        {"tenant": "loki-team", "query": "up", "tenant_config": draft},
        format="json",
    )
    assert response.status_code == 200, response.content
    queriers = response.json()["queriers"]
    # No scheduler runs in this test process, so the count is unknown, and says so.
    assert queriers["max_query_capacity"] == 0.25 and queriers["known"] is None
    assert "unknown" in queriers["summary"]


def test_explain_names_the_actor_sub_queue_and_the_levels_it_ignores(editor_api):
    etag = editor_api.get("/api/v1/settings/")["ETag"]
    editor_api.patch(
        "/api/v1/settings/", {"max_queue_hierarchy_levels": 2}, format="json", HTTP_IF_MATCH=etag
    )
    response = editor_api.post(
        "/api/v1/explain/",
        {"tenant": "t", "query": "up", "headers": {"X-Loki-Actor-Path": "users|joe|dash|panel"}},
        format="json",
    )
    assert response.status_code == 200, response.content
    actor = response.json()["actor"]
    assert actor["path"] == ["users", "joe", "dash", "panel"]
    assert actor["placed"] == ["users", "joe"]
    assert actor["summary"] == "actor sub-queue users|joe (levels beyond 2 ignored: dash|panel)"
    plain = editor_api.post("/api/v1/explain/", {"tenant": "t", "query": "up"}, format="json")
    assert plain.json()["actor"]["placed"] == []
