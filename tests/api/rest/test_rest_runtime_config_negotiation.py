"""`runtime-config/` content negotiation: every YAML media type out, errors in JSON."""

from __future__ import annotations

import pytest
import yaml

URL = "/api/v1/runtime-config/"
FILE = "overrides:\n  team-a:\n    max_queriers_per_tenant: 4\n"


@pytest.fixture
def stored(editor_api):
    response = editor_api.put(URL, FILE, content_type="application/yaml")
    assert response.status_code == 200


@pytest.mark.parametrize("media", ["application/yaml", "text/yaml", "application/x-yaml"])
def test_the_export_answers_each_yaml_media_type_the_import_reads(editor_api, stored, media):
    response = editor_api.get(URL, HTTP_ACCEPT=media)
    assert response.status_code == 200
    assert response["Content-Type"].split(";")[0] == media
    assert yaml.safe_load(response.content) == yaml.safe_load(FILE)


@pytest.mark.parametrize("accept", [None, "*/*", "application/*"])
def test_the_export_is_application_yaml_when_any_type_is_accepted(editor_api, stored, accept):
    headers = {"HTTP_ACCEPT": accept} if accept else {}
    response = editor_api.get(URL, **headers)
    assert response["Content-Type"].split(";")[0] == "application/yaml"


def test_an_unacceptable_accept_is_406_answered_in_json(editor_api, stored):
    response = editor_api.get(URL, HTTP_ACCEPT="text/html")
    assert response.status_code == 406
    assert response["Content-Type"] == "application/json"
    assert "Accept" in response.json()["detail"]


def test_a_bad_format_is_400_naming_it_in_json(editor_api, stored):
    response = editor_api.get(URL, {"format": "xml"}, HTTP_ACCEPT="application/json")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"format": ["must be one of yaml, json"]}


def test_a_format_the_accept_header_refuses_is_406_in_json(editor_api, stored):
    response = editor_api.get(URL, {"format": "json"}, HTTP_ACCEPT="application/yaml")
    assert response.status_code == 406
    assert response["Content-Type"] == "application/json"


def test_an_import_no_renderer_can_answer_is_406_in_json(editor_api):
    response = editor_api.put(
        URL, "overrides: [", content_type="text/yaml", HTTP_ACCEPT="text/html"
    )
    assert response.status_code == 406
    assert response["Content-Type"] == "application/json"


def test_a_head_of_the_export_carries_the_headers_a_get_would(editor_api, stored):
    got, head = editor_api.get(URL), editor_api.head(URL)
    assert head.status_code == 200 and head.content == b""
    for header in ("Content-Type", "ETag", "Content-Length"):
        assert head[header] == got[header], header
