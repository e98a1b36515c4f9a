"""A review confirmed again after its own save (the browser's Back): said so, never saved twice."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from api.store import selectors, services
from api.store.models import ConfigRevision, Tenant
from tests.dashboard.saving import review_token
from tests.dashboard.test_views import form

pytestmark = pytest.mark.django_db


def _reviewed(client: Client, url: str, data: dict[str, Any]) -> dict[str, Any]:
    """The confirming post of Save's review, as the review page holds it."""
    token = review_token(client.post(url, data).content.decode())
    assert token is not None
    return {**data, "reviewed": token}


@pytest.fixture
def acme(rules: dict[str, Any]) -> Tenant:
    return services.tenant_put(
        tenant_id="acme", config=rules, expected_version=None, author=None, source="cli"
    )


@pytest.fixture
def other_editor_client(db: None) -> Client:
    user = User.objects.create_user("olga", password="pw-olga-123")
    user.groups.add(Group.objects.get(name="editor"))
    client = Client()
    client.force_login(user)
    return client


def test_confirming_a_review_again_after_its_own_save_says_it_is_saved(
    editor_client: Client, acme: Tenant
) -> None:
    confirming = _reviewed(editor_client, "/tenants/acme/", form(acme.version, "down"))
    assert editor_client.post("/tenants/acme/", confirming).status_code == 302
    saved = selectors.tenant_get(tenant_id="acme").version
    again = editor_client.post("/tenants/acme/", confirming, follow=True)
    html = again.content.decode()
    assert again.redirect_chain == [("/tenants/acme/", 302)]
    assert f"You already saved this change: it is revision #{saved}" in html
    assert "Someone saved a change" not in html
    assert ConfigRevision.objects.count() == 2


def test_a_new_tenant_confirmed_again_after_its_creation_says_it_is_saved(
    editor_client: Client,
) -> None:
    confirming = _reviewed(editor_client, "/tenants/new/", {**form(None, "up"), "tenant_id": "b"})
    editor_client.post("/tenants/new/", confirming)
    html = editor_client.post("/tenants/new/", confirming, follow=True).content.decode()
    assert "You already saved this change" in html and "already exists" not in html
    assert ConfigRevision.objects.count() == 1


def test_someone_elses_identical_change_or_a_different_draft_is_still_stale(
    editor_client: Client, other_editor_client: Client, acme: Tenant
) -> None:
    confirming = _reviewed(editor_client, "/tenants/acme/", form(acme.version, "down"))
    other = _reviewed(other_editor_client, "/tenants/acme/", form(acme.version, "down"))
    assert other_editor_client.post("/tenants/acme/", other).status_code == 302
    refused = editor_client.post("/tenants/acme/", confirming)
    assert refused.status_code == 409
    assert "Someone saved a change since you loaded this page" in refused.content.decode()
    # Olga's own form, another draft at the old version: stale, not "already saved".
    changed = other_editor_client.post("/tenants/acme/", form(acme.version, "sideways"))
    assert changed.status_code == 409 and "You already saved" not in changed.content.decode()
    assert ConfigRevision.objects.count() == 2


def test_settings_confirmed_again_after_their_own_save_say_they_are_saved(
    editor_client: Client,
) -> None:
    version = selectors.settings_get().version
    confirming = _reviewed(
        editor_client, "/settings/", {"version": version, "querier_forget_delay": "30s"}
    )
    editor_client.post("/settings/", confirming)
    saved = selectors.settings_get().version
    again = editor_client.post("/settings/", confirming, follow=True)
    assert f"You already saved this change: it is revision #{saved}" in again.content.decode()
    assert ConfigRevision.objects.count() == 1
