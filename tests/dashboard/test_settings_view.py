"""Each settings box carries the setting that runs, whatever draft the page shows in it.

The page's script asks before leaving while a box differs from its running
value (static/dashboard/settings_leave.js; tests/e2e/test_settings_leave_browser.py):
a page rendered from a post shows the draft, so the box's value is no measure.
"""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from scheduler_core.model import QueueConfig
from scheduler_core.validation import queue_config_to_dict

pytestmark = pytest.mark.django_db

RUNNING = queue_config_to_dict(QueueConfig())


def _form(client: Client, **changed: str) -> dict[str, str]:
    loaded = client.get("/settings/").context
    data = {f["name"]: str(f["value"]) for f in loaded["fields"]}
    data.update(version=str(loaded["version"]), **changed)
    return data


def _box(page: str, name: str) -> str:
    """The opening tag of setting `name`'s box."""
    found = re.search(rf'<(?:input|select) id="s-{re.escape(name)}"[^>]*>', page)
    assert found is not None, name
    return html.unescape(found.group(0))


def test_the_fresh_page_s_boxes_carry_the_values_they_show_as_running(
    editor_client: Client,
) -> None:
    page = editor_client.get("/settings/").content.decode()
    for name, value in RUNNING.items():
        assert f'data-running="{value}"' in _box(page, name), name
    assert 'src="/static/dashboard/settings_leave.js"' in page


@pytest.mark.parametrize(
    ("changed", "marks"),
    [
        # Save's first press: the review, over the typed draft.
        ({"stuck_threshold": "7m"}, 'id="review"'),
        # A Save the validator refuses, the refused value kept in its box.
        ({"stuck_threshold": "soon"}, 'id="error-summary"'),
        # Simulate's way back (settings_view.DRAFT).
        ({"stuck_threshold": "7m", "action": "draft"}, 'id="settings-draft"'),
    ],
)
def test_a_page_rendered_from_a_post_shows_the_draft_over_the_running_value(
    editor_client: Client, changed: dict[str, str], marks: str
) -> None:
    answer = editor_client.post("/settings/", _form(editor_client, **changed))
    page = answer.content.decode()
    assert marks in page
    box = _box(page, "stuck_threshold")
    assert f'value="{changed["stuck_threshold"]}"' in box
    assert f'data-running="{RUNNING["stuck_threshold"]}"' in box
    field = next(f for f in answer.context["fields"] if f["name"] == "stuck_threshold")
    assert (field["value"], field["running"]) == (changed["stuck_threshold"], "1m")
