"""Text that is no number, typed in a number box of the tenant editor or the settings page.

The boxes are text inputs, not `<input type=number>`: for "-", "1e" or
"--5" Chromium's number input has `value == ""`, so the post could not be
told from a box left blank (not set in the editor, unchanged on the settings
page). As text the server gets what was typed, refuses it at the box, and
saves nothing (tests/e2e/test_number_boxes_browser.py types it in Chromium).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from api.store import selectors, services

pytestmark = pytest.mark.django_db

UNREADABLE = ["-", "1e", "--5"]


def _box(html: str, box_id: str) -> str:
    found = re.search(rf'<input id="{re.escape(box_id)}"[^>]*>', html)
    assert found is not None, box_id
    return found.group()


@pytest.mark.parametrize("typed", UNREADABLE)
@pytest.mark.parametrize(
    "box", ["max_queriers_per_tenant", "query_priority.priorities[0].priority"]
)
def test_the_editor_refuses_text_that_is_no_number_at_its_box_and_saves_nothing(
    editor_client: Client, rules: dict[str, Any], typed: str, box: str
) -> None:
    services.tenant_put(
        tenant_id="acme", config=rules, expected_version=None, author=None, source="cli"
    )
    tenant = selectors.tenant_get(tenant_id="acme")
    post = {
        "version": tenant.version,
        "max_queriers_per_tenant": "3",
        "query_priority.enabled": "on",
        "query_priority.priorities[0].priority": "5",
        "query_priority.priorities[0].query_attributes[0].regex": "up",
        box: typed,
        "action": "save",
    }
    response = editor_client.post("/tenants/acme/", post)
    assert response.status_code == 400
    html = response.content.decode()
    field = _box(html, box)
    assert 'aria-invalid="true"' in field and f'aria-describedby="{box}-err"' in field
    assert f'value="{typed}"' in field
    assert (
        f'<p class="field-error" id="{box}-err">must be an integer, got &#x27;{typed}&#x27;' in html
    )
    assert "Nothing was saved" in html
    assert selectors.tenant_get(tenant_id="acme").version == tenant.version


@pytest.mark.parametrize("typed", UNREADABLE)
def test_the_settings_page_refuses_text_that_is_no_number_at_its_box_and_saves_nothing(
    editor_client: Client, typed: str
) -> None:
    before = selectors.settings_get()
    post = {"version": before.version, "max_queue_hierarchy_levels": typed}
    response = editor_client.post("/settings/", post)
    assert response.status_code == 400
    html = response.content.decode()
    field = _box(html, "s-max_queue_hierarchy_levels")
    assert 'aria-invalid="true"' in field
    assert 'aria-describedby="s-max_queue_hierarchy_levels-err"' in field
    assert "autofocus" in field and f'value="{typed}"' in field
    message = f"must be an integer, got &#x27;{typed}&#x27;"
    assert f'<p class="field-error" id="s-max_queue_hierarchy_levels-err">{message}' in html
    summary = re.search(r'role="alert" id="error-summary">.*?</div>', html, re.S)
    assert summary is not None
    assert "Nothing was saved: 1 problem." in summary.group()
    assert (
        f'<a href="#s-max_queue_hierarchy_levels">Max queue hierarchy levels</a>: {message}'
        in summary.group()
    )
    after = selectors.settings_get()
    assert (after.version, after.config) == (before.version, before.config)


def test_only_the_first_refused_setting_takes_the_focus(editor_client: Client) -> None:
    post = {
        "version": selectors.settings_get().version,
        "max_outstanding_requests_per_tenant": "-",
        "max_queue_hierarchy_levels": "1e",
    }
    html = editor_client.post("/settings/", post).content.decode()
    assert "autofocus" in _box(html, "s-max_outstanding_requests_per_tenant")
    assert "autofocus" not in _box(html, "s-max_queue_hierarchy_levels")
    assert "Nothing was saved: 2 problems." in html
