"""`GET /api/v1/`: the API's index, under the same rules as every endpoint."""

from __future__ import annotations

from typing import Any

import pytest

EXPECTED_DOCS = {
    "schema": "/api/v1/schema/",
    "swagger_ui": "/api/v1/schema/swagger-ui/",
    "redoc": "/api/v1/schema/redoc/",
}


def test_the_api_root_lists_the_docs_and_each_endpoint_without_an_id(viewer_api: Any) -> None:
    response = viewer_api.get("/api/v1/")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["title"] == "Queue inspector API"
    assert body["version"] == "1.0.0"
    assert body["docs"] == EXPECTED_DOCS
    assert body["endpoints"]["tenants"] == "/api/v1/tenants/"
    assert body["endpoints"]["runtime_config"] == "/api/v1/runtime-config/"
    assert len(body["endpoints"]) == 13


def test_every_address_the_index_gives_names_an_endpoint(viewer_api: Any) -> None:
    body = viewer_api.get("/api/v1/").json()
    for path in [*body["docs"].values(), *body["endpoints"].values()]:
        # Not 404: a 200, or a 405 (POST-only) or 400 (required parameters)
        # from the endpoint itself.
        response = viewer_api.get(path)
        assert response.status_code != 404, (path, response.content)


def test_the_api_root_needs_a_role_as_the_schema_does(anon_api: Any) -> None:
    for path in ("/api/v1/", "/api/v1/schema/"):
        response = anon_api.get(path)
        assert response.status_code == 401
        assert response["Content-Type"] == "application/json"
        assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_the_api_root_takes_only_reads(editor_api: Any, method: str) -> None:
    response = getattr(editor_api, method)("/api/v1/", {}, format="json")
    assert response.status_code == 405
    assert response["Content-Type"] == "application/json"


def test_the_api_root_refuses_a_parameter_it_does_not_take_by_name(viewer_api: Any) -> None:
    response = viewer_api.get("/api/v1/?page=2")
    assert response.status_code == 400
    assert "page" in response.json()


def test_the_api_root_without_its_slash_is_pointed_to_it(viewer_api: Any) -> None:
    response = viewer_api.get("/api/v1")
    assert response.status_code == 404
    assert response.json() == {"detail": "no endpoint at /api/v1; did you mean /api/v1/?"}
