"""If-None-Match on writes and reads, as RFC 9110 13.1.2 has it.

A write whose If-None-Match names the existing object (`*`, or its version)
is not done (412), whatever its If-Match says; a read compares weakly, so
`W/"7"` is version 7 (304). A rollback answers with the config version's ETag,
and is a write too. A tag matches only as sent: "007" is not "7".
"""

from __future__ import annotations

from typing import Any

import pytest

from api.store.models import ConfigRevision, Tenant

URL = "/api/v1/tenants/t1/"


@pytest.fixture
def version(editor_api: Any) -> str:
    response = editor_api.put(URL, {"max_queriers_per_tenant": 1}, format="json")
    assert response.status_code == 201
    return str(response["ETag"])


def _unchanged(revisions: int) -> None:
    assert ConfigRevision.objects.count() == revisions
    assert Tenant.objects.get(tenant_id="t1").config == {"max_queriers_per_tenant": 1}


@pytest.mark.parametrize(
    "headers",
    [
        {"HTTP_IF_NONE_MATCH": "*", "HTTP_IF_MATCH": "*"},
        {"HTTP_IF_NONE_MATCH": "*"},
        {"HTTP_IF_NONE_MATCH": "CURRENT", "HTTP_IF_MATCH": "*"},
        {"HTTP_IF_NONE_MATCH": 'W/CURRENT, "999999"'},
    ],
)
@pytest.mark.parametrize("method", ["patch", "put", "delete"])
def test_a_write_whose_if_none_match_names_the_tenant_is_412_and_writes_nothing(
    editor_api: Any, version: str, method: str, headers: dict[str, str]
) -> None:
    sent = {name: value.replace("CURRENT", version) for name, value in headers.items()}
    revisions = ConfigRevision.objects.count()
    body = None if method == "delete" else {"max_queriers_per_tenant": 2}
    response = getattr(editor_api, method)(URL, body, format="json", **sent)
    assert response.status_code == 412, response.content
    assert response["ETag"] == version
    _unchanged(revisions)


def test_an_if_none_match_naming_another_version_lets_the_write_through(
    editor_api: Any, version: str
) -> None:
    response = editor_api.patch(
        URL,
        {"max_queriers_per_tenant": 2},
        format="json",
        HTTP_IF_MATCH=version,
        HTTP_IF_NONE_MATCH='"999999"',
    )
    assert response.status_code == 200, response.content


def test_a_settings_write_naming_the_current_version_in_if_none_match_is_412(
    editor_api: Any,
) -> None:
    current = editor_api.get("/api/v1/settings/")["ETag"]
    response = editor_api.patch(
        "/api/v1/settings/",
        {"layout": "tenant-first"},
        format="json",
        HTTP_IF_MATCH="*",
        HTTP_IF_NONE_MATCH=current,
    )
    assert response.status_code == 412, response.content
    assert "If-None-Match names" in response.json()["detail"]


def test_a_read_compares_if_none_match_weakly(editor_api: Any, version: str) -> None:
    assert editor_api.get(URL, HTTP_IF_NONE_MATCH=f"W/{version}").status_code == 304
    # If-Match stays strong: a weak tag never matches a write.
    response = editor_api.patch(
        URL, {"max_queriers_per_tenant": 2}, format="json", HTTP_IF_MATCH=f"W/{version}"
    )
    assert response.status_code == 412


def test_a_rollback_answers_with_the_config_versions_etag(editor_api: Any, version: str) -> None:
    editor_api.patch(URL, {"max_queriers_per_tenant": 3}, format="json", HTTP_IF_MATCH=version)
    latest = ConfigRevision.objects.order_by("-version").first()
    assert latest is not None
    response = editor_api.post(f"/api/v1/revisions/{latest.pk}/rollback/")
    assert response.status_code == 201, response.content
    assert response["ETag"] == f'"{response.json()["revision"]["version"]}"'
    again = editor_api.post(f"/api/v1/revisions/{latest.pk}/rollback/")
    assert again.status_code == 200 and again["ETag"] == response["ETag"]


@pytest.mark.parametrize(
    "headers",
    [
        {"HTTP_IF_NONE_MATCH": "*"},
        {"HTTP_IF_NONE_MATCH": "CURRENT", "HTTP_IF_MATCH": "CURRENT"},
    ],
)
def test_a_rollback_whose_if_none_match_names_the_config_is_412_and_writes_nothing(
    editor_api: Any, version: str, headers: dict[str, str]
) -> None:
    editor_api.patch(URL, {"max_queriers_per_tenant": 3}, format="json", HTTP_IF_MATCH=version)
    latest = ConfigRevision.objects.order_by("-version").first()
    assert latest is not None
    current = f'"{latest.version}"'
    sent = {name: value.replace("CURRENT", current) for name, value in headers.items()}

    response = editor_api.post(f"/api/v1/revisions/{latest.pk}/rollback/", **sent)

    assert response.status_code == 412, response.content
    assert ConfigRevision.objects.count() == 2


@pytest.mark.parametrize("tag", ['"0{v}"', '"{v}.0"', '"+{v}"', '" {v}"'])
def test_an_entity_tag_matches_only_as_it_was_sent(editor_api: Any, version: str, tag: str) -> None:
    # Compared character by character (RFC 9110 8.8.3.2): "007" is not "7".
    sent = tag.format(v=version.strip('"'))
    assert editor_api.get(URL, HTTP_IF_NONE_MATCH=sent).status_code == 200
    response = editor_api.patch(
        URL, {"max_queriers_per_tenant": 2}, format="json", HTTP_IF_MATCH=sent
    )
    assert response.status_code == 412, response.content
    _unchanged(ConfigRevision.objects.count())
