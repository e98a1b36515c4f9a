"""`revisions/?tenant=<id>`: the revisions that changed a tenant, imports included."""

from __future__ import annotations

from typing import Any

import pytest

URL = "/api/v1/revisions/"


@pytest.fixture
def history(editor_api: Any) -> None:
    for tenant in ("t1", "t2"):
        assert editor_api.put(f"/api/v1/tenants/{tenant}/", {}, format="json").status_code == 201
    body = "overrides:\n  t1: {}\n"
    response = editor_api.put(
        "/api/v1/runtime-config/", body, content_type="application/yaml", HTTP_IF_MATCH="*"
    )
    assert response.status_code == 200, response.content


def _listed(response: Any) -> list[tuple[str, str]]:
    assert response.status_code == 200, response.content
    return [(row["kind"], row["key"]) for row in response.json()["results"]]


@pytest.mark.usefixtures("history")
def test_a_tenants_revisions_include_the_import_that_deleted_it(viewer_api: Any) -> None:
    assert _listed(viewer_api.get(URL, {"tenant": "t2"})) == [
        ("runtime-config", ""),
        ("tenant", "t2"),
    ]
    # The import left t1 as it was; `key` still names a tenant's own writes only.
    assert _listed(viewer_api.get(URL, {"tenant": "t1"})) == [("tenant", "t1")]
    assert _listed(viewer_api.get(URL, {"key": "t2"})) == [("tenant", "t2")]
    assert _listed(viewer_api.get(URL, {"tenant": "t2", "kind": "tenant"})) == [("tenant", "t2")]


@pytest.mark.parametrize("tenant", ["", "a b", "x" * 151])
def test_a_tenant_no_tenant_could_be_is_a_400_naming_it(viewer_api: Any, tenant: str) -> None:
    response = viewer_api.get(URL, {"tenant": tenant})
    assert response.status_code == 400
    assert list(response.json()) == ["tenant"]
