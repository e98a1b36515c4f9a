"""`settings/` and the whole-config YAML when the stored settings row holds no mapping.

An old release or a hand edit can leave a list, a string or a number in the
row. The scheduler runs such settings as the defaults
(`selectors.settings_as_run`); the API must say the same and let a PATCH
repair the row, not answer 500.
"""

from __future__ import annotations

from typing import Any

import pytest

from api.store import selectors
from api.store.models import ConfigRevision, SchedulerSettings
from scheduler_core.model import QueueConfig
from scheduler_core.validation import queue_config_to_dict

URL = "/api/v1/settings/"
NOT_MAPPINGS = [["tenant-first"], "tenant-first", 5]


def _store(value: Any) -> None:
    SchedulerSettings.objects.filter(pk=selectors.settings_get().pk).update(config=value)


@pytest.mark.parametrize("stored", NOT_MAPPINGS)
def test_get_settings_answers_the_defaults_that_run_over_a_stored_non_mapping(
    viewer_api: Any, stored: Any
) -> None:
    _store(stored)
    response = viewer_api.get(URL)
    assert response.status_code == 200, response.content
    assert response.json() == queue_config_to_dict(QueueConfig())


@pytest.mark.parametrize("stored", NOT_MAPPINGS)
def test_a_patch_over_a_stored_non_mapping_repairs_the_row_as_a_revision(
    editor_api: Any, stored: Any
) -> None:
    _store(stored)
    response = editor_api.patch(URL, {"stuck_threshold": "2m"}, format="json", HTTP_IF_MATCH="*")
    assert response.status_code == 200, response.content
    expected = {**queue_config_to_dict(QueueConfig()), "stuck_threshold": "2m"}
    assert response.json() == expected
    assert selectors.settings_get().config == expected
    revision = ConfigRevision.objects.get(kind=ConfigRevision.Kind.SETTINGS)
    # The revision says what the row held, so History shows the repair.
    assert revision.before == stored and revision.after == expected
    assert response["ETag"] == f'"{revision.version}"'


def test_a_patch_writing_the_defaults_over_a_stored_non_mapping_still_repairs_it(
    editor_api: Any,
) -> None:
    """Read as the defaults, the broken row would look unchanged and stay broken."""
    _store(["tenant-first"])
    response = editor_api.patch(URL, {"layout": "tenant-first"}, format="json", HTTP_IF_MATCH="*")
    assert response.status_code == 200, response.content
    assert selectors.settings_get().config == queue_config_to_dict(QueueConfig())
    assert ConfigRevision.objects.filter(kind=ConfigRevision.Kind.SETTINGS).count() == 1


def test_a_bad_patch_over_a_stored_non_mapping_names_its_field_and_changes_nothing(
    editor_api: Any,
) -> None:
    _store("tenant-first")
    response = editor_api.patch(URL, {"layout": "sideways"}, format="json", HTTP_IF_MATCH="*")
    assert response.status_code == 400
    assert set(response.json()) == {"layout"}
    assert selectors.settings_get().config == "tenant-first"
    assert not ConfigRevision.objects.exists()


def test_comparing_the_whole_config_shows_a_stored_non_mapping_as_stored(
    editor_api: Any,
) -> None:
    created = editor_api.put("/api/v1/tenants/t1/", {}, format="json").json()
    assert created == {}
    first = ConfigRevision.objects.get().pk
    _store(["tenant-first"])
    editor_api.patch(URL, {"stuck_threshold": "2m"}, format="json", HTTP_IF_MATCH="*")
    newest = ConfigRevision.objects.order_by("-pk").first()
    assert newest is not None
    response = editor_api.get(
        "/api/v1/revisions/compare/", {"from": first, "to": newest.pk, "scope": "config"}
    )
    assert response.status_code == 200, response.content
    body = response.json()
    (settings,) = [change for change in body["diff"] if change["path"] == "settings"]
    assert settings["before"] == ["tenant-first"]
    assert settings["after"]["stuck_threshold"] == "2m"
    assert "\n-- tenant-first\n" in body["yaml_diff"]
    assert "+  stuck_threshold: 2m" in body["yaml_diff"]


def test_rolling_back_the_repair_previews_the_broken_row_and_then_refuses_it(
    editor_api: Any,
) -> None:
    """Restoring a row that holds no mapping would restore settings nobody can run."""
    _store(["tenant-first"])
    editor_api.patch(URL, {"stuck_threshold": "2m"}, format="json", HTTP_IF_MATCH="*")
    repair = ConfigRevision.objects.get()
    shown = editor_api.get(f"/api/v1/revisions/{repair.pk}/")
    assert shown.status_code == 200, shown.content
    assert shown.json()["before"] == ["tenant-first"]
    assert "\n-- tenant-first\n" in shown.json()["yaml_diff"]
    rollback = f"/api/v1/revisions/{repair.pk}/rollback/"
    preview = editor_api.post(f"{rollback}?dry_run=1")
    assert preview.status_code == 200, preview.content
    assert preview.json()["diff"][0]["after"] == ["tenant-first"]
    refused = editor_api.post(rollback, HTTP_IF_MATCH=preview["ETag"])
    assert refused.status_code == 400
    assert "must be a mapping" in refused.json()["non_field_errors"][0]
    assert selectors.settings_get().config["stuck_threshold"] == "2m"
    assert ConfigRevision.objects.count() == 1
