"""A stored block the validator now refuses is flagged where operators look, and fixable."""

from __future__ import annotations

import html

from django.test import Client

from api.store.models import Tenant
from tests.dashboard.saving import confirm
from tests.dashboard.test_yaml_editor import yaml_post

# Stored by an older version: a regex RE2 refuses, a number past int64.
OLD = {
    "max_queriers_per_tenant": 2,
    "max_outstanding_requests_per_tenant": 2**70,
    "query_priority": {
        "enabled": True,
        "priorities": [{"priority": 5, "query_attributes": [{"regex": "(?=up)x"}]}],
    },
}


def test_the_tenants_list_names_a_failing_block_and_its_field_errors(
    viewer_client: Client,
) -> None:
    Tenant.objects.create(tenant_id="old", config=OLD)
    Tenant.objects.create(tenant_id="fine", config={"max_queriers_per_tenant": 1})
    page = html.unescape(viewer_client.get("/tenants/").content.decode())
    assert page.count("stored block no longer validates") == 1
    assert "<code>max_outstanding_requests_per_tenant</code>" in page
    assert "<code>query_priority.priorities[0].query_attributes[0].regex</code>" in page


def test_the_editor_says_the_block_no_longer_validates_and_marks_its_fields(
    viewer_client: Client,
) -> None:
    Tenant.objects.create(tenant_id="old", config=OLD)
    Tenant.objects.create(tenant_id="fine", config={"max_queriers_per_tenant": 1})
    old = viewer_client.get("/tenants/old/").content.decode()
    assert "The stored block no longer validates" in old
    assert 'class="field-error"' in old
    assert "no longer validates" not in viewer_client.get("/tenants/fine/").content.decode()


def test_the_rest_get_keeps_the_stored_block_and_the_editor_saves_it_fixed(
    editor_client: Client,
) -> None:
    tenant = Tenant.objects.create(tenant_id="old", config=OLD)
    assert editor_client.get("/api/v1/tenants/old/").json() == OLD
    fixed = "old:\n  max_queriers_per_tenant: 2\n  max_outstanding_requests_per_tenant: 100\n"
    saved = confirm(editor_client, "/tenants/old/", yaml_post(fixed, "save", tenant.version))
    assert saved.status_code == 302
    assert Tenant.objects.get(tenant_id="old").config == {
        "max_queriers_per_tenant": 2,
        "max_outstanding_requests_per_tenant": 100,
    }
    page = editor_client.get("/tenants/").content.decode()
    assert "no longer validates" not in page
