"""Errors no view answered are JSON under /api/ and the site's pages elsewhere."""

from __future__ import annotations

from typing import Any

from django.test import RequestFactory

from config import urls


def test_a_path_under_the_api_that_names_no_endpoint_is_a_json_404(editor_api: Any) -> None:
    for path in ("/api/v1/nope/", "/api/v1/tenants//"):
        response = editor_api.get(path)
        assert response.status_code == 404
        assert response["Content-Type"] == "application/json"
        assert response.json()["detail"].startswith(f"no endpoint at {path};")


def test_an_unknown_page_outside_the_api_is_still_the_sites_404_page(client: Any) -> None:
    response = client.get("/nope/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_an_error_that_escaped_a_view_under_the_api_is_a_json_500() -> None:
    response = urls.handler500(RequestFactory().get("/api/v1/tenants/"))
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert b"internal error" in response.content
    page = urls.handler500(RequestFactory().get("/"))
    assert page["Content-Type"].startswith("text/html")
