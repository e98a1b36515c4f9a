"""A 412 for an If-Match that names no version says so, not "it changed since"."""

from __future__ import annotations

from typing import Any

import pytest

from api.store.models import Tenant

URL = "/api/v1/tenants/t1/"


@pytest.mark.parametrize("sent", ["1", 'W/"1"', "one", '"1'])
def test_an_unquoted_or_weak_if_match_is_412_saying_how_to_send_it(
    editor_api: Any, sent: str
) -> None:
    assert editor_api.put(URL, {}, format="json").status_code == 201
    response = editor_api.put(
        URL, {"max_queriers_per_tenant": 2}, format="json", HTTP_IF_MATCH=sent
    )
    assert response.status_code == 412
    assert response["ETag"] == '"1"'
    detail = response.json()["detail"]
    assert f"If-Match: {sent} names no version" in detail
    assert 'quotes included (If-Match: "1")' in detail
    assert "changed since" not in detail
    assert Tenant.objects.get(tenant_id="t1").config == {}


def test_a_stale_quoted_if_match_still_says_the_object_changed(editor_api: Any) -> None:
    editor_api.put(URL, {}, format="json")
    editor_api.put(URL, {"max_queriers_per_tenant": 2}, format="json", HTTP_IF_MATCH='"1"')
    response = editor_api.put(URL, {}, format="json", HTTP_IF_MATCH='"1"')
    assert response.status_code == 412
    assert "it changed since" in response.json()["detail"]


def test_the_settings_document_reads_alike(editor_api: Any) -> None:
    response = editor_api.patch(
        "/api/v1/settings/", {"layout": "component-first"}, format="json", HTTP_IF_MATCH="0"
    )
    assert response.status_code == 412
    assert "If-Match: 0 names no version" in response.json()["detail"]
