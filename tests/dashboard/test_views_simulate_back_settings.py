"""The Simulate page's way back to Settings, with the settings form's unsaved draft."""

from __future__ import annotations

import pytest
from django.test import Client

from api.store import selectors
from api.store.models import ConfigRevision
from tests.dashboard.test_views_simulate_back import _back_form

pytestmark = pytest.mark.django_db


def _settings_form(client: Client, **changed: str) -> dict[str, str]:
    """The settings form as its Simulate button posts it, with `changed` typed in."""
    loaded = client.get("/settings/").context
    data = {f["name"]: str(f["value"]) for f in loaded["fields"]}
    data.update(version=str(loaded["version"]), simulate_from="settings", **changed)
    return data


def _field(page_context: object, name: str) -> dict[str, object]:
    return next(f for f in page_context["fields"] if f["name"] == name)  # type: ignore[index]


def test_an_editor_goes_back_from_simulate_to_settings_with_the_draft_unsaved(
    editor_client: Client,
) -> None:
    version = selectors.settings_get().version
    posted = _settings_form(editor_client, layout="component-first", message="try QWQP")
    page = editor_client.post("/simulate/", posted).content.decode()
    assert "‹ Back to Settings, with this draft" in page
    url, fields = _back_form(page)
    assert url == "/settings/"
    assert fields["layout"] == "component-first" and fields["message"] == "try QWQP"
    assert fields["version"] == str(version) and fields["action"] == "draft"
    revisions = ConfigRevision.objects.count()
    answer = editor_client.post(url, fields)
    shown = answer.content.decode()
    # The changed setting, marked unsaved, at the version the page was loaded with.
    assert answer.status_code == 200 and _field(answer.context, "layout")["value"] == (
        "component-first"
    )
    assert '<option value="component-first" selected>' in shown
    assert 'id="settings-draft"' in shown and "data-draft" in shown
    assert f'name="version" value="{version}"' in shown
    assert 'name="message" value="try QWQP"' in shown
    # Nothing saved on the way.
    assert ConfigRevision.objects.count() == revisions
    assert selectors.queue_config_get().layout == "tenant-first"


def test_a_value_settings_will_refuse_goes_back_as_typed_and_is_marked_at_its_box(
    editor_client: Client,
) -> None:
    posted = _settings_form(editor_client, querier_forget_delay="soon")
    url, fields = _back_form(editor_client.post("/simulate/", posted).content.decode())
    assert fields["querier_forget_delay"] == "soon"
    answer = editor_client.post(url, fields)
    field = _field(answer.context, "querier_forget_delay")
    assert field["value"] == "soon" and field["errors"]
    assert "Save will refuse this draft: 1 problem." in answer.content.decode()


def test_the_settings_page_opened_afresh_is_no_draft(editor_client: Client) -> None:
    shown = editor_client.get("/settings/").content.decode()
    assert 'id="settings-draft"' not in shown and "data-draft" not in shown


def test_a_viewer_gets_a_plain_link_back_to_settings_and_may_not_post_a_draft(
    viewer_client: Client,
) -> None:
    posted = _settings_form(viewer_client)
    page = viewer_client.post("/simulate/", posted).content.decode()
    assert 'id="sim-back"' not in page
    assert '<a href="/settings/" id="sim-back-link">‹ Settings</a>' in page
    answer = viewer_client.post("/settings/", {**posted, "action": "draft"})
    assert answer.status_code == 403
