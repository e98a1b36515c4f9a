"""Stored settings the validator now refuses are named on the settings page, and fixable."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.test import Client

from api.store import selectors
from api.store.models import ConfigRevision, SchedulerSettings
from scheduler_core.model import QueueConfig
from scheduler_core.validation import queue_config_to_dict
from tests.dashboard.saving import confirm

DEFAULTS = queue_config_to_dict(QueueConfig())
# As an older version stored them: a valid layout beside a threshold and a
# setting the validator now refuses, which makes the defaults run whole.
OLD = {**DEFAULTS, "layout": "component-first", "stuck_threshold": -5, "retired_knob": 1}


@pytest.fixture
def old_settings() -> SchedulerSettings:
    """The settings row holding `OLD`, written past validation as the old version did."""
    row = selectors.settings_get()
    row.config = OLD
    row.save()
    return row


def _page(client: Client) -> str:
    return html.unescape(client.get("/settings/").content.decode())


def _selected_layout(page: str) -> str:
    found = re.search(r'<option value="([a-z-]+)" selected>', page)
    assert found is not None
    return found.group(1)


def test_the_settings_page_names_each_refused_stored_setting_and_says_the_defaults_run(
    viewer_client: Client, old_settings: SchedulerSettings
) -> None:
    page = _page(viewer_client)
    assert 'id="stored-refused"' in page
    assert "the scheduler runs the defaults" in page
    assert "<code>stuck_threshold</code>, stored as <code>-5</code>: must be > 0, got -5" in page
    assert (
        "<code>retired_knob</code>, stored as <code>1</code>: unknown field "
        "(the form has no such setting: a save drops it)"
    ) in page
    # A viewer is told what a save would do, not offered one.
    assert "An editor saving this form replaces the stored settings" in page


def test_the_settings_form_shows_what_runs_and_marks_each_stored_value_not_running(
    viewer_client: Client, old_settings: SchedulerSettings
) -> None:
    page = _page(viewer_client)
    assert _selected_layout(page) == DEFAULTS["layout"]
    assert f'name="stuck_threshold" value="{DEFAULTS["stuck_threshold"]}"' in page
    assert 'id="s-stuck_threshold-stored">Stored as <code>-5</code>, not running: must be' in page
    # Valid alone, but not running either: the defaults replace every setting.
    assert 'id="s-layout-stored">Stored as <code>component-first</code>, not running' in page
    assert 'aria-describedby="s-layout-stored"' in page
    # A stored value that is what runs is not marked.
    assert 'id="s-priority_aging-stored"' not in page


def test_valid_stored_settings_show_no_notice(viewer_client: Client) -> None:
    page = _page(viewer_client)
    assert 'id="stored-refused"' not in page and "-stored" not in page


def test_saving_the_running_defaults_is_reviewed_as_replacing_the_stored_settings(
    editor_client: Client, old_settings: SchedulerSettings
) -> None:
    """The review diffed what runs against itself: "Nothing to save", and no way to save."""
    data: dict[str, Any] = {**DEFAULTS, "version": old_settings.version}
    first = html.unescape(editor_client.post("/settings/", data).content.decode())
    assert "Nothing to save" not in first
    assert "<code>layout</code>" in first and "<code>stuck_threshold</code>" in first
    assert "Saving the form replaces the stored settings" in first
    assert confirm(editor_client, "/settings/", data).status_code == 302
    assert selectors.settings_get().config == DEFAULTS
    revision = ConfigRevision.objects.get(kind=ConfigRevision.Kind.SETTINGS)
    assert (revision.before, revision.after) == (OLD, DEFAULTS)
    assert 'id="stored-refused"' not in _page(editor_client)


def test_an_editor_saves_the_stored_settings_fixed(
    editor_client: Client, old_settings: SchedulerSettings
) -> None:
    data = {**DEFAULTS, "version": old_settings.version}
    data.update(layout="component-first", stuck_threshold="30s")
    assert confirm(editor_client, "/settings/", data).status_code == 302
    running, refused = selectors.queue_config_checked()
    assert refused == []
    assert (running.layout, running.stuck_threshold_seconds) == ("component-first", 30.0)


def test_a_refused_save_still_says_the_stored_settings_do_not_run(
    editor_client: Client, old_settings: SchedulerSettings
) -> None:
    data = {**DEFAULTS, "version": old_settings.version, "stuck_threshold": "soon"}
    answer = editor_client.post("/settings/", data)
    assert answer.status_code == 400
    page = answer.content.decode()
    assert 'id="error-summary"' in page and 'id="stored-refused"' in page
    assert 'aria-describedby="s-stuck_threshold-err s-stuck_threshold-stored"' in page
    assert selectors.settings_get().config == OLD
