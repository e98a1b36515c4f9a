"""`settings/`: canonical settings with an ETag; PATCH under If-Match."""

from __future__ import annotations

from typing import Any

from api.store import selectors
from api.store.models import SchedulerSettings
from scheduler_core.model import QueueConfig

URL = "/api/v1/settings/"


def test_get_returns_every_setting_with_defaults_and_an_etag(viewer_api):
    response = viewer_api.get(URL)
    assert response.status_code == 200
    assert response.json() == {
        "layout": "tenant-first",
        "component_selection": "round-robin",
        "max_outstanding_requests_per_tenant": 100,
        "querier_forget_delay": "0s",
        "priority_aging": "0s",
        "query_ingesters_within": "13h",
        "query_store_after": "12h",
        "max_queue_hierarchy_levels": 3,
        "actor_path_header": "X-Loki-Actor-Path",
        "stuck_threshold": "1m",
        "max_federated_tenants": 0,
    }
    assert response["ETag"] == '"0"'


def test_actor_sub_queue_settings_are_validated_with_their_field(editor_api):
    etag = editor_api.get(URL)["ETag"]
    bad = editor_api.patch(
        URL,
        {"max_queue_hierarchy_levels": 11, "actor_path_header": "bad header"},
        format="json",
        HTTP_IF_MATCH=etag,
    )
    assert bad.status_code == 400
    assert "at most 10" in bad.json()["max_queue_hierarchy_levels"][0]
    assert "header name" in bad.json()["actor_path_header"][0]
    good = editor_api.patch(
        URL,
        {"max_queue_hierarchy_levels": 1, "actor_path_header": "X-Grafana-User"},
        format="json",
        HTTP_IF_MATCH=etag,
    )
    assert good.status_code == 200, good.content
    assert good.json()["max_queue_hierarchy_levels"] == 1
    assert good.json()["actor_path_header"] == "X-Grafana-User"


def test_a_null_actor_path_header_is_refused_and_the_old_one_keeps_running(editor_api):
    before = editor_api.get(URL)
    bad = editor_api.patch(
        URL, {"actor_path_header": None}, format="json", HTTP_IF_MATCH=before["ETag"]
    )
    assert bad.status_code == 400
    assert "must not be empty" in bad.json()["actor_path_header"][0]
    assert editor_api.get(URL).json() == before.json()


def test_patch_changes_only_the_given_settings(editor_api):
    etag = editor_api.get(URL)["ETag"]
    response = editor_api.patch(
        URL,
        {"layout": "component-first", "priority_aging": "30s"},
        format="json",
        HTTP_IF_MATCH=etag,
    )
    assert response.status_code == 200
    body = response.json()
    assert body["layout"] == "component-first"
    assert body["priority_aging"] == "30s"
    assert body["component_selection"] == "round-robin"
    assert response["ETag"] != etag
    assert editor_api.get(URL).json() == body


def test_patch_without_if_match_is_428_and_with_a_stale_one_412(editor_api):
    etag = editor_api.get(URL)["ETag"]
    assert editor_api.patch(URL, {"layout": "component-first"}, format="json").status_code == 428
    editor_api.patch(URL, {"layout": "component-first"}, format="json", HTTP_IF_MATCH=etag)
    stale = editor_api.patch(URL, {"layout": "tenant-first"}, format="json", HTTP_IF_MATCH=etag)
    assert stale.status_code == 412
    assert editor_api.get(URL).json()["layout"] == "component-first"


def test_invalid_settings_name_their_fields_and_change_nothing(editor_api):
    etag = editor_api.get(URL)["ETag"]
    response = editor_api.patch(
        URL,
        {"layout": "sideways", "query_store_after": "14h", "nope": 1},
        format="json",
        HTTP_IF_MATCH=etag,
    )
    assert response.status_code == 400
    errors = response.json()
    assert "must be one of" in errors["layout"][0]
    assert "less than query_ingesters_within" in errors["query_store_after"][0]
    assert errors["nope"] == ["unknown field"]
    assert editor_api.get(URL)["ETag"] == etag


def test_viewers_read_settings_but_cannot_change_them(viewer_api):
    assert viewer_api.get(URL).status_code == 200
    response = viewer_api.patch(
        URL, {"layout": "component-first"}, format="json", HTTP_IF_MATCH='"0"'
    )
    assert response.status_code == 403


def test_settings_an_upgrade_refuses_are_fixed_by_a_patch_over_what_runs(
    editor_api: Any,
) -> None:
    """Stored settings that no longer validate run as the defaults; a PATCH
    is made over those (it answered 500 reading the stored ones)."""
    row = selectors.settings_get()
    SchedulerSettings.objects.filter(pk=row.pk).update(
        config={**row.config, "layout": "component-first", "stuck_threshold": -5}
    )
    response = editor_api.patch(URL, {"stuck_threshold": 30}, format="json", HTTP_IF_MATCH="*")
    assert response.status_code == 200, response.content
    assert response.json()["stuck_threshold"] == "30s"
    # Over the defaults the scheduler ran, not the stored layout it refused.
    assert response.json()["layout"] == QueueConfig().layout
    assert selectors.queue_config_checked()[1] == []


def test_an_actor_path_header_that_carries_credentials_is_refused_and_changes_nothing(
    editor_api,
):
    before = editor_api.get(URL)
    bad = editor_api.patch(
        URL, {"actor_path_header": "Authorization"}, format="json", HTTP_IF_MATCH=before["ETag"]
    )
    assert bad.status_code == 400
    assert "carries credentials" in bad.json()["actor_path_header"][0]
    after = editor_api.get(URL)
    assert after.json() == before.json() and after["ETag"] == before["ETag"]
