"""Errors no view answered are JSON under /api/ and the site's pages elsewhere."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client, RequestFactory

from config import urls


@pytest.mark.parametrize("debug", [False, True], ids=["debug_off", "debug_on"])
@pytest.mark.parametrize("method", ["get", "head", "post", "put", "patch", "delete", "options"])
@pytest.mark.parametrize("path", ["/api/v1/nope/", "/api/v1/tenants//", "/api/v1/nope", "/api/"])
def test_a_path_under_the_api_that_names_no_endpoint_is_a_json_404(
    editor_api: Any, settings: Any, method: str, path: str, debug: bool
) -> None:
    # With DEBUG on (as under `make demo`) Django answered with its HTML debug
    # page, which never calls handler404.
    settings.DEBUG = debug
    response = getattr(editor_api, method)(path, {}, format="json", HTTP_ACCEPT="application/json")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    if method != "head":
        assert response.json() == {
            "detail": f"no endpoint at {path}; "
            "the endpoints are listed at /api/v1/ and in /api/v1/schema/"
        }


@pytest.mark.parametrize("debug", [False, True], ids=["debug_off", "debug_on"])
def test_a_signed_in_browsers_write_to_an_unknown_api_path_is_a_404_not_a_csrf_page(
    settings: Any, debug: bool, django_user_model: Any
) -> None:
    settings.DEBUG = debug
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(django_user_model.objects.create_user("someone"))
    response = browser.post("/api/v1/nope/", {"a": "1"})
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"


@pytest.mark.parametrize("debug", [False, True], ids=["debug_off", "debug_on"])
def test_an_unknown_api_path_is_answered_before_authentication(
    anon_api: Any, settings: Any, debug: bool
) -> None:
    settings.DEBUG = debug
    response = anon_api.get("/api/v2/tenants/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"


@pytest.mark.parametrize("debug", [False, True], ids=["debug_off", "debug_on"])
def test_an_unknown_page_outside_the_api_is_still_an_html_404(
    client: Any, settings: Any, debug: bool
) -> None:
    settings.DEBUG = debug
    for path in ("/nope/", "/apis/", "/xapi/v1/"):
        response = client.get(path)
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
