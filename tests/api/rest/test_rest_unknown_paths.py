"""Errors no view answered are JSON under /api/ and the site's pages elsewhere."""

from __future__ import annotations

from typing import Any

import pytest
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


@pytest.mark.parametrize("debug", [False, True], ids=["debug_off", "debug_on"])
@pytest.mark.parametrize("method", ["get", "head", "post", "put", "patch", "delete", "options"])
def test_an_api_url_without_its_final_slash_is_a_json_404_naming_it_with_the_slash(
    editor_api: Any, settings: Any, method: str, debug: bool
) -> None:
    # Django's APPEND_SLASH answered a 301 with an empty HTML body (before
    # authentication), and a write with DEBUG on was an HTML 500 page.
    settings.DEBUG = debug
    response = getattr(editor_api, method)("/api/v1/tenants/x", {}, format="json")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert "Location" not in response
    if method != "head":
        assert response.json() == {
            "detail": "no endpoint at /api/v1/tenants/x; did you mean /api/v1/tenants/x/?"
        }


def test_an_api_url_without_its_slash_is_refused_before_authentication(anon_api: Any) -> None:
    response = anon_api.put("/api/v1/runtime-config", "overrides: {}", content_type="text/yaml")
    assert response.status_code == 404
    assert "did you mean /api/v1/runtime-config/?" in response.json()["detail"]


def test_a_page_outside_the_api_without_its_slash_is_still_redirected(client: Any) -> None:
    response = client.get("/tenants")
    assert response.status_code == 301
    assert response["Location"] == "/tenants/"


def test_a_bad_host_header_under_the_api_is_a_json_400_and_elsewhere_the_sites_page(
    client: Any, settings: Any
) -> None:
    settings.DEBUG = False
    settings.ALLOWED_HOSTS = ["scheduler.example"]
    response = client.get("/api/v1/tenants/", HTTP_HOST="evil.example")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "the Host header names no host this server answers to"}
    page = client.get("/tenants/", HTTP_HOST="evil.example")
    assert page.status_code == 400
    assert page["Content-Type"].startswith("text/html")
