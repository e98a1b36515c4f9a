"""A tenant named "new" (a valid Cortex org ID) has an editor; /tenants/new/ stays for creating."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from api.store import services
from api.store.models import Tenant
from tests.dashboard.saving import confirm
from tests.tenant_form_inputs import inputs

pytestmark = pytest.mark.django_db

EDITOR = "/tenants/new/edit/"


@pytest.fixture
def named_new(rules: dict[str, Any]) -> Tenant:
    return services.tenant_put(
        tenant_id="new", config=rules, expected_version=None, author=None, source="cli"
    )


def test_the_tenants_list_links_a_tenant_named_new_to_its_long_address(
    editor_client: Client, named_new: Tenant
) -> None:
    listing = editor_client.get("/tenants/").content.decode()
    assert f'<a href="{EDITOR}">new</a>' in listing
    editor = editor_client.get(EDITOR).content.decode()
    assert 'id="delete-tenant"' in editor and 'action="/tenants/new/delete/"' in editor
    assert 'href="/tenants/new/edit/" id="discard"' in editor
    # The short address is still the creation page, tenant or no tenant.
    creation = editor_client.get("/tenants/new/").content.decode()
    assert 'action="/tenants/new/"' in creation and "delete-tenant" not in creation


def test_every_tenant_also_answers_at_its_long_address(
    viewer_client: Client, rules: dict[str, Any]
) -> None:
    services.tenant_put(
        tenant_id="acme", config=rules, expected_version=None, author=None, source="cli"
    )
    short = viewer_client.get("/tenants/acme/")
    long = viewer_client.get("/tenants/acme/edit/")
    assert short.status_code == long.status_code == 200
    assert viewer_client.get("/tenants/nobody/edit/").status_code == 404


def test_a_tenant_named_new_is_saved_from_its_editor_and_sent_back_there(
    editor_client: Client, named_new: Tenant
) -> None:
    page = editor_client.get(EDITOR).content.decode()
    answer = confirm(editor_client, EDITOR, {**inputs(page), "max_queriers_per_tenant": "5"})
    assert answer.status_code == 302 and answer["Location"] == EDITOR
    saved = Tenant.objects.get(tenant_id="new")
    assert saved.version > named_new.version
    assert saved.config["max_queriers_per_tenant"] == 5


def test_creating_a_tenant_named_new_lands_on_its_editor(editor_client: Client) -> None:
    page = editor_client.get("/tenants/new/").content.decode()
    answer = confirm(
        editor_client,
        "/tenants/new/",
        {**inputs(page), "tenant_id": "new", "max_queriers_per_tenant": "2"},
    )
    assert answer.status_code == 302 and answer["Location"] == EDITOR
    assert Tenant.objects.get(tenant_id="new").config["max_queriers_per_tenant"] == 2
