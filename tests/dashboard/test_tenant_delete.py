"""Deleting a tenant from its editor: a dialog for editors, version-checked as the REST DELETE."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from api.store import selectors, services
from api.store.models import ConfigRevision, Tenant
from api.store.services import api_token_issue

pytestmark = pytest.mark.django_db


@pytest.fixture
def acme(rules: dict[str, Any]) -> Tenant:
    return services.tenant_put(
        tenant_id="acme", config=rules, expected_version=None, author=None, source="cli"
    )


def _rest_editor() -> APIClient:
    _, plaintext = api_token_issue(name="editor-bot", role="editor")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    return client


def _dialog(html: str) -> str:
    found = re.search(r'<dialog id="delete-dialog".*?</dialog>', html, re.DOTALL)
    assert found is not None, "the editor offers no delete dialog"
    return found.group(0)


def test_the_editor_offers_delete_in_a_dialog_saying_what_it_means_at_the_pages_version(
    editor_client: Client, acme: Tenant
) -> None:
    html = editor_client.get("/tenants/acme/").content.decode()
    assert 'id="delete-tenant" commandfor="delete-dialog" command="show-modal"' in html
    dialog = _dialog(html)
    assert 'action="/tenants/acme/delete/"' in dialog
    assert 'name="csrfmiddlewaretoken"' in dialog
    assert f'name="version" value="{acme.version}"' in dialog
    assert "every request it sends from now on, then run under the default limits" in dialog
    assert "History keeps the deletion as a revision: rolling it back restores" in dialog
    assert 'formmethod="dialog" formnovalidate id="cancel-delete" autofocus>Cancel' in dialog


def test_a_viewer_and_a_new_tenant_are_offered_no_delete(
    viewer_client: Client, editor_client: Client, acme: Tenant
) -> None:
    for html in (
        viewer_client.get("/tenants/acme/").content.decode(),
        editor_client.get("/tenants/new/").content.decode(),
    ):
        assert "delete-tenant" not in html and "delete-dialog" not in html
    assert viewer_client.post("/tenants/acme/delete/", {"version": acme.version}).status_code == 403
    assert Tenant.objects.filter(tenant_id="acme").exists()


def test_deleting_lists_it_as_done_and_history_shows_the_deletion_which_rolls_back(
    editor_client: Client, acme: Tenant, rules: dict[str, Any]
) -> None:
    done = editor_client.post(
        "/tenants/acme/delete/", {"version": acme.version, "message": "retired"}, follow=True
    )
    assert done.redirect_chain[-1][0] == "/tenants/"
    assert "Deleted acme; its queued and future requests now use the default limits" in (
        done.content.decode()
    )
    assert not Tenant.objects.filter(tenant_id="acme").exists()
    deletion = ConfigRevision.objects.first()
    assert deletion is not None and deletion.after is None
    assert (deletion.author_name, deletion.source, deletion.message) == ("erin", "ui", "retired")
    history = editor_client.get("/history/").content.decode()
    assert "deleted by erin via UI" in history
    # Its name is no link while it is gone (the link led to a 404 page).
    assert 'href="/tenants/acme/"' not in history
    assert 'title="no such tenant now">acme<' in history
    asked = editor_client.post(f"/history/{deletion.pk}/rollback/").content.decode()
    seen = re.search(r'name="seen_version" value="(\d+)"', asked)
    assert seen is not None
    editor_client.post(
        f"/history/{deletion.pk}/rollback/", {"confirm": "yes", "seen_version": seen.group(1)}
    )
    assert selectors.tenant_get(tenant_id="acme").config == rules
    assert 'href="/tenants/acme/"' in editor_client.get("/history/").content.decode()


def test_a_stale_delete_gives_the_stale_message_and_deletes_nothing(
    editor_client: Client, acme: Tenant
) -> None:
    services.tenant_patch(
        tenant_id="acme",
        changes={"max_queriers_per_tenant": 1},
        expected_version=None,
        author=None,
        source="api",
    )
    answer = editor_client.post("/tenants/acme/delete/", {"version": acme.version}, follow=True)
    assert answer.redirect_chain[-1][0] == "/tenants/acme/"
    assert "Someone saved a change since you loaded this page" in answer.content.decode()
    assert Tenant.objects.filter(tenant_id="acme").exists()


@pytest.mark.parametrize("version", [None, "", "7x"])
def test_a_delete_without_the_pages_version_deletes_nothing_as_rest_without_if_match(
    editor_client: Client, acme: Tenant, version: str | None
) -> None:
    data = {} if version is None else {"version": version}
    answer = editor_client.post("/tenants/acme/delete/", data, follow=True)
    assert "Nothing was deleted: the form gave no version of acme" in answer.content.decode()
    assert Tenant.objects.filter(tenant_id="acme").exists()
    # The REST DELETE refuses the same: no version, no deletion.
    assert _rest_editor().delete("/api/v1/tenants/acme/").status_code == 428
    assert Tenant.objects.filter(tenant_id="acme").exists()


def test_a_tenant_deleted_meanwhile_is_said_gone_as_rest_says_404(
    editor_client: Client, acme: Tenant
) -> None:
    services.tenant_delete(tenant_id="acme", expected_version=None, author=None, source="api")
    answer = editor_client.post("/tenants/acme/delete/", {"version": acme.version}, follow=True)
    assert "There is no tenant acme to delete" in answer.content.decode()
    rest = _rest_editor().delete("/api/v1/tenants/acme/", HTTP_IF_MATCH=f'"{acme.version}"')
    assert rest.status_code == 404
    assert ConfigRevision.objects.count() == 2
