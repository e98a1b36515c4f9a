"""The Simulate page's way back to the editor it was opened from, with its draft."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.test import Client

from api.store import selectors, services
from api.store.models import ConfigRevision
from tests.dashboard.test_views import REGEX, form

pytestmark = pytest.mark.django_db

BACK = re.compile(r'<form method="post" action="([^"]+)" id="sim-back".*?</form>', re.S)
HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')


@pytest.fixture
def acme(rules: dict[str, Any]) -> int:
    """acme saved; its version."""
    services.tenant_put(
        tenant_id="acme", config=rules, expected_version=None, author=None, source="cli"
    )
    return selectors.tenant_get(tenant_id="acme").version


def _editor_form(version: int | None, regex: str) -> dict[str, str]:
    """The tenant editor's form as its "Simulate this change" posts it."""
    data = form(version, regex, simulate_from="tenant:acme", view="form")
    del data["action"]
    return data


def _back_form(page: str) -> tuple[str, dict[str, str]]:
    """The back form's action and its hidden fields (the CSRF token left out)."""
    found = BACK.search(page)
    assert found is not None, "no way back to the editor"
    fields = {
        name: html.unescape(value)
        for name, value in HIDDEN.findall(found.group(0))
        if name != "csrfmiddlewaretoken"
    }
    return found.group(1), fields


def test_an_editor_goes_back_from_simulate_to_the_editor_with_the_draft_unsaved(
    editor_client: Client, acme: int
) -> None:
    page = editor_client.post("/simulate/", _editor_form(acme, "special")).content.decode()
    assert "‹ Back to tenant acme&#x27;s editor, with this draft" in page
    url, fields = _back_form(page)
    assert url == "/tenants/acme/"
    assert fields["version"] == str(acme) and fields["action"] == "view-form"
    revisions = ConfigRevision.objects.count()
    editor = editor_client.post(url, fields).content.decode()
    # The form view, on the draft, marked unsaved, at the version it was loaded with.
    assert f'name="{REGEX}" value="special"' in editor
    assert "data-draft" in editor
    assert f'name="version" value="{acme}"' in editor
    assert ConfigRevision.objects.count() == revisions
    assert (
        selectors.tenant_get(tenant_id="acme").config["query_priority"]["priorities"][0][
            "query_attributes"
        ][0]["regex"]
        == "up"
    )


def test_the_change_note_typed_beside_the_draft_goes_back_to_the_editor_too(
    editor_client: Client, acme: int
) -> None:
    posted = {**_editor_form(acme, "special"), "message": 'narrow "special" <first>'}
    url, fields = _back_form(editor_client.post("/simulate/", posted).content.decode())
    assert fields["message"] == 'narrow "special" <first>'
    editor = editor_client.post(url, fields).content.decode()
    assert 'id="message" name="message" value="narrow &quot;special&quot; &lt;first&gt;"' in editor


def test_a_draft_from_the_yaml_view_goes_back_to_the_yaml_view_as_typed(
    editor_client: Client, acme: int
) -> None:
    typed = "# kept\nmax_queriers_per_tenant: 4\n"
    form = {"simulate_from": "tenant:acme", "view": "yaml", "yaml": typed, "version": str(acme)}
    url, fields = _back_form(editor_client.post("/simulate/", form).content.decode())
    assert fields["yaml"] == typed and fields["action"] == "view-yaml"
    editor = editor_client.post(url, fields).content.decode()
    assert "# kept" in editor


def test_a_yaml_text_that_is_no_block_still_goes_back_to_be_fixed(
    editor_client: Client, acme: int
) -> None:
    typed = "max_queriers_per_tenant: [\n"
    form = {"simulate_from": "tenant:acme", "view": "yaml", "yaml": typed, "version": str(acme)}
    page = editor_client.post("/simulate/", form).content.decode()
    url, fields = _back_form(page)
    assert fields["yaml"] == typed
    assert editor_client.post(url, fields).status_code == 200


def test_a_tenant_not_saved_yet_goes_back_to_the_new_tenant_editor(
    editor_client: Client,
) -> None:
    url, fields = _back_form(
        editor_client.post("/simulate/", _editor_form(None, "special")).content.decode()
    )
    assert url == "/tenants/new/" and fields["tenant_id"] == "acme"
    editor = editor_client.post(url, fields).content.decode()
    assert 'id="tenant_id" name="tenant_id" value="acme"' in editor
    assert f'name="{REGEX}" value="special"' in editor
    assert not selectors.tenant_configs(["acme"])


def test_a_viewer_gets_a_plain_link_to_the_tenant_and_no_draft_to_post(
    viewer_client: Client, acme: int
) -> None:
    page = viewer_client.post("/simulate/", _editor_form(acme, "up")).content.decode()
    assert BACK.search(page) is None
    assert '<a href="/tenants/acme/" id="sim-back-link">‹ Tenant acme&#x27;s editor</a>' in page


def test_simulate_opened_from_the_menu_has_no_way_back(editor_client: Client) -> None:
    assert 'id="sim-back-link"' not in editor_client.get("/simulate/").content.decode()
