"""`?format=`: DRF's format override is a query parameter like any other.

DRF answers a format no renderer writes with a bare 404 "Not found.", as
if the endpoint did not exist; docs/api.md lists `?format=xml` among the
values that are a 400 naming the parameter.
"""

from __future__ import annotations

from typing import Any

import pytest

from api.store.models import SchedulerSettings, Tenant

READS = [
    "/api/v1/tenants/",
    "/api/v1/settings/",
    "/api/v1/revisions/",
    "/api/v1/queue/",
    "/api/v1/queue/requests/",
    "/api/v1/queriers/",
]


@pytest.mark.parametrize("url", READS)
@pytest.mark.parametrize("value", ["xml", "api", ""])
def test_a_format_no_renderer_writes_is_a_400_naming_format(
    viewer_api: Any, url: str, value: str
) -> None:
    response = viewer_api.get(url, {"format": value})
    assert response.status_code == 400, response.content
    assert response.json() == {"format": ["must be one of json"]}


def test_the_runtime_config_export_names_both_of_its_formats(viewer_api: Any) -> None:
    response = viewer_api.get("/api/v1/runtime-config/", {"format": "xml"})
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"format": ["must be one of yaml, json"]}


def test_json_is_still_read_everywhere(viewer_api: Any) -> None:
    for url in READS:
        assert viewer_api.get(url, {"format": "json"}).status_code == 200, url


def test_a_write_with_a_bad_format_is_refused_and_changes_nothing(editor_api: Any) -> None:
    put = editor_api.put("/api/v1/tenants/t1/?format=xml", {}, format="json")
    assert put.status_code == 400
    assert put.json() == {"format": ["must be one of json"]}
    assert not Tenant.objects.exists()
    patch = editor_api.patch(
        "/api/v1/settings/?format=xml",
        {"layout": "component-first"},
        format="json",
        HTTP_IF_MATCH="*",
    )
    assert patch.status_code == 400
    assert SchedulerSettings.objects.get().config == {}


def test_an_anonymous_caller_with_a_bad_format_gets_its_401_first(anon_api: Any) -> None:
    for url in ("/api/v1/tenants/?format=xml", "/api/v1/runtime-config/?format=xml"):
        response = anon_api.get(url)
        assert response.status_code == 401, url
        assert response["WWW-Authenticate"] == 'Bearer realm="api"'


def test_the_schema_refuses_a_format_it_does_not_write_and_serves_those_it_does(
    viewer_api: Any,
) -> None:
    response = viewer_api.get("/api/v1/schema/", {"format": "xml"})
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"format": ["must be one of yaml, json"]}
    assert viewer_api.get("/api/v1/schema/", {"format": "json"}).json()["openapi"]
    assert viewer_api.get("/api/v1/schema/", {"format": "yaml"}).status_code == 200
