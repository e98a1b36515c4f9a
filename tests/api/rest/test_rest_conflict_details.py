"""A 412 names what conflicted: whose version moved, to what, and what the client sent."""

from __future__ import annotations

TENANT = "/api/v1/tenants/team-a/"
RUNTIME_CONFIG = "/api/v1/runtime-config/"


def _two_versions(client) -> tuple[str, str]:
    """(stale ETag, current ETag) of tenant team-a."""
    first = client.put(TENANT, {"max_queriers_per_tenant": 1}, format="json")
    second = client.patch(
        TENANT, {"max_queriers_per_tenant": 2}, format="json", HTTP_IF_MATCH=first["ETag"]
    )
    return first["ETag"], second["ETag"]


def test_a_stale_tenant_write_names_the_tenant_its_version_and_the_tag_sent(editor_api):
    stale, current = _two_versions(editor_api)
    response = editor_api.patch(
        TENANT, {"max_queriers_per_tenant": 3}, format="json", HTTP_IF_MATCH=stale
    )
    assert response.status_code == 412
    assert response["ETag"] == current
    detail = response.json()["detail"]
    assert detail.startswith(f"tenant 'team-a' is at version {current.strip(chr(34))} ")
    assert f"If-Match: {stale}" in detail
    assert "GET it, reapply your change" in detail


def test_a_create_only_put_of_an_existing_tenant_says_it_exists(editor_api):
    _, current = _two_versions(editor_api)
    response = editor_api.put(TENANT, {}, format="json", HTTP_IF_NONE_MATCH="*")
    assert response.status_code == 412
    assert response.json()["detail"] == (
        f"tenant 'team-a' is at version {current.strip(chr(34))} (this answer's ETag): "
        "it exists, and If-None-Match: * only creates"
    )


def test_an_if_match_put_of_a_missing_tenant_says_it_does_not_exist(editor_api):
    response = editor_api.put("/api/v1/tenants/ghost/", {}, format="json", HTTP_IF_MATCH='"3"')
    assert response.status_code == 412
    assert "ETag" not in response
    assert response.json()["detail"] == (
        "tenant 'ghost' does not exist (any more), and If-Match never creates (If-Match: \"3\")"
    )


def test_a_stale_import_names_the_tenant_set(editor_api):
    stale, current = _two_versions(editor_api)
    response = editor_api.put(
        RUNTIME_CONFIG, "overrides: {}\n", content_type="application/yaml", HTTP_IF_MATCH=stale
    )
    assert response.status_code == 412
    detail = response.json()["detail"]
    assert detail.startswith(
        f"the tenant set (the runtime-config export) is at version {current.strip(chr(34))} "
    )
    assert f"If-Match: {stale}" in detail


def test_a_create_only_import_over_tenants_says_tenants_exist(editor_api):
    _two_versions(editor_api)
    response = editor_api.put(
        RUNTIME_CONFIG, "overrides: {}\n", content_type="application/yaml", HTTP_IF_NONE_MATCH="*"
    )
    assert response.status_code == 412
    assert "tenants exist, and If-None-Match: * only creates" in response.json()["detail"]


def test_a_stale_rollback_names_the_config_version_and_says_to_preview_again(editor_api):
    _two_versions(editor_api)
    revision = editor_api.get("/api/v1/revisions/").json()["results"][0]["id"]
    url = f"/api/v1/revisions/{revision}/rollback/"
    reviewed = editor_api.post(f"{url}?dry_run=1")["ETag"]
    editor_api.put("/api/v1/tenants/team-b/", {}, format="json")
    response = editor_api.post(url, HTTP_IF_MATCH=reviewed)
    assert response.status_code == 412
    detail = response.json()["detail"]
    assert detail.startswith(f"the config is at version {response['ETag'].strip(chr(34))} ")
    assert f"If-Match: {reviewed}" in detail
    assert "preview the rollback again (?dry_run=1)" in detail


def test_a_stale_settings_patch_names_the_settings_and_the_tag_sent(editor_api):
    url = "/api/v1/settings/"
    first = editor_api.get(url)["ETag"]
    second = editor_api.patch(
        url, {"max_outstanding_requests_per_tenant": 50}, format="json", HTTP_IF_MATCH=first
    )["ETag"]
    response = editor_api.patch(
        url, {"max_outstanding_requests_per_tenant": 60}, format="json", HTTP_IF_MATCH=first
    )
    assert response.status_code == 412
    assert response["ETag"] == second
    detail = response.json()["detail"]
    now = second.strip(chr(34))
    assert detail.startswith(f"the scheduler settings document is at version {now} ")
    assert f"If-Match: {first}" in detail
    assert "GET settings/ again" in detail
