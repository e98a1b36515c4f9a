"""The tenant editor: `max_query_capacity` on its field; explain (queriers, actor)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from api.store import selectors, services
from api.store.models import Tenant
from tests.dashboard.saving import confirm

pytestmark = pytest.mark.django_db


def form(version: int, capacity: str, **extra: str) -> dict[str, Any]:
    return {
        "action": "save",
        "version": str(version),
        "max_queriers_per_tenant": "0",
        "max_query_capacity": capacity,
        "query_priority.default_priority": "0",
        **extra,
    }


@pytest.fixture
def loki() -> Tenant:
    return services.tenant_put(
        tenant_id="loki", config={}, expected_version=None, author=None, source="cli"
    )


def test_the_editor_saves_max_query_capacity(editor_client: Client, loki: Tenant) -> None:
    response = confirm(editor_client, "/tenants/loki/", form(loki.version, "0.25"))
    assert response.status_code == 302, response.content.decode()[:2000]
    assert selectors.tenant_get(tenant_id="loki").config["max_query_capacity"] == 0.25
    html = editor_client.get("/tenants/loki/").content.decode()
    assert 'name="max_query_capacity" value="0.25"' in html


def test_a_capacity_above_one_is_shown_on_its_field(editor_client: Client, loki: Tenant) -> None:
    html = editor_client.post("/tenants/loki/", form(loki.version, "1.5")).content.decode()
    assert 'id="max_query_capacity-err"' in html and "at most 1" in html
    assert "max_query_capacity" not in selectors.tenant_get(tenant_id="loki").config


def test_explain_names_the_querier_share(editor_client: Client, loki: Tenant) -> None:
    data = form(loki.version, "0.5", explain_query="up", explain_api_type="query")
    html = editor_client.post("/tenants/loki/explain/", data).content.decode()
    assert 'id="explain-queriers"' in html


def test_explain_names_the_actor_sub_queue(editor_client: Client, loki: Tenant) -> None:
    data = form(loki.version, "", explain_query="up", explain_actor_path="apps|cli")
    html = editor_client.post("/tenants/loki/explain/", data).content.decode()
    assert '<dd id="explain-actor">Actor sub-queue apps|cli</dd>' in html
