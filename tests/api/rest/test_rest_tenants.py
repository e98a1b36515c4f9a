"""`tenants/`: create, replace, merge, delete, with ETag/If-Match and field-path errors."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from api.rest.content import MAX_JSON_BODY_BYTES
from api.store.models import Tenant

URL = "/api/v1/tenants/t1/"


def _create(client: APIClient, body: dict[str, Any], url: str = URL) -> str:
    response = client.put(url, body, format="json")
    assert response.status_code == 201, response.content
    return str(response["ETag"])


def test_put_of_a_new_tenant_creates_it_and_returns_its_etag(editor_api, rules):
    response = editor_api.put(URL, rules, format="json")
    assert response.status_code == 201
    assert response.json() == rules
    etag = response["ETag"]
    got = editor_api.get(URL)
    assert got.status_code == 200
    assert got.json() == rules
    assert got["ETag"] == etag == f'"{Tenant.objects.get(tenant_id="t1").version}"'


def test_put_of_an_existing_tenant_without_if_match_is_428(editor_api, rules):
    _create(editor_api, rules)
    changed = {**rules, "max_queriers_per_tenant": 9}
    response = editor_api.put(URL, changed, format="json")
    assert response.status_code == 428
    assert "If-Match" in response.json()["detail"]
    assert Tenant.objects.get(tenant_id="t1").config == rules


def test_put_with_a_stale_etag_is_412_and_names_the_current_one(editor_api, rules):
    old = _create(editor_api, rules)
    fresh = editor_api.put(
        URL, {**rules, "max_queriers_per_tenant": 4}, format="json", HTTP_IF_MATCH=old
    )
    assert fresh.status_code == 200
    stale = editor_api.put(
        URL, {**rules, "max_queriers_per_tenant": 5}, format="json", HTTP_IF_MATCH=old
    )
    assert stale.status_code == 412
    assert stale["ETag"] == fresh["ETag"] != old
    assert Tenant.objects.get(tenant_id="t1").config["max_queriers_per_tenant"] == 4


def test_put_with_the_current_etag_replaces_the_whole_block(editor_api, rules):
    etag = _create(editor_api, rules)
    response = editor_api.put(
        URL, {"max_queriers_per_tenant": 2}, format="json", HTTP_IF_MATCH=etag
    )
    assert response.status_code == 200
    assert response.json() == {"max_queriers_per_tenant": 2}
    assert response["ETag"] != etag


def test_if_none_match_star_only_creates(editor_api, rules):
    assert editor_api.put(URL, rules, format="json", HTTP_IF_NONE_MATCH="*").status_code == 201
    again = editor_api.put(URL, rules, format="json", HTTP_IF_NONE_MATCH="*")
    assert again.status_code == 412


def test_if_match_never_creates_a_missing_tenant(editor_api, rules):
    response = editor_api.put(URL, rules, format="json", HTTP_IF_MATCH='"1"')
    assert response.status_code == 412
    assert not Tenant.objects.filter(tenant_id="t1").exists()


def test_if_match_star_and_lists_of_etags_are_understood(editor_api, rules):
    etag = _create(editor_api, rules)
    listed = editor_api.patch(
        URL, {"max_queriers_per_tenant": 1}, format="json", HTTP_IF_MATCH=f'"999", {etag}'
    )
    assert listed.status_code == 200
    star = editor_api.patch(URL, {"max_queriers_per_tenant": 2}, format="json", HTTP_IF_MATCH="*")
    assert star.status_code == 200
    weak = editor_api.patch(
        URL, {"max_queriers_per_tenant": 3}, format="json", HTTP_IF_MATCH=f"W/{star['ETag']}"
    )
    assert weak.status_code == 412


def test_get_with_the_current_etag_in_if_none_match_is_304(editor_api, rules):
    etag = _create(editor_api, rules)
    assert editor_api.get(URL, HTTP_IF_NONE_MATCH=etag).status_code == 304
    assert editor_api.get(URL, HTTP_IF_NONE_MATCH='"0"').status_code == 200


def test_patch_merges_and_null_removes_a_field(editor_api, rules):
    etag = _create(editor_api, {**rules, "max_outstanding_requests_per_tenant": 50})
    patch = {"max_outstanding_requests_per_tenant": None, "query_priority": {"enabled": False}}
    response = editor_api.patch(URL, patch, format="json", HTTP_IF_MATCH=etag)
    assert response.status_code == 200
    body = response.json()
    assert "max_outstanding_requests_per_tenant" not in body
    assert body["query_priority"]["enabled"] is False
    assert body["query_priority"]["priorities"] == rules["query_priority"]["priorities"]


@pytest.mark.parametrize(
    ("patch", "path"),
    [
        ({"max_querier_per_tenant": None}, ["max_querier_per_tenant"]),
        ({"query_rejection": {"zzz": None}}, ["query_rejection", "zzz"]),
        ({"query_priority": {"enable": None}}, ["query_priority", "enable"]),
    ],
)
def test_a_patch_removing_a_field_no_block_has_is_400_and_writes_nothing(
    editor_api, rules, patch, path
):
    etag = _create(editor_api, rules)
    response = editor_api.patch(URL, patch, format="json", HTTP_IF_MATCH=etag)
    assert response.status_code == 400, response.content
    said = response.json()
    for key in path:
        said = said[key]
    assert said[0].startswith("unknown field")
    assert editor_api.get(URL)["ETag"] == etag


def test_a_patch_says_an_unknown_null_and_a_bad_value_together(editor_api, rules):
    etag = _create(editor_api, rules)
    patch = {"max_querier_per_tenant": None, "max_queriers_per_tenant": -1, "bogus": 1}
    response = editor_api.patch(URL, patch, format="json", HTTP_IF_MATCH=etag)
    assert response.status_code == 400
    errors = response.json()
    assert set(errors) == {"max_querier_per_tenant", "max_queriers_per_tenant", "bogus"}
    assert errors["max_querier_per_tenant"] == [
        "unknown field; did you mean max_queriers_per_tenant?"
    ]
    assert errors["bogus"] == ["unknown field"]


def test_patch_takes_rfc_7386s_own_media_type_and_put_does_not(editor_api, rules):
    etag = _create(editor_api, rules)
    body = '{"max_queriers_per_tenant": 3}'
    media = "application/merge-patch+json"
    response = editor_api.patch(URL, body, content_type=media, HTTP_IF_MATCH=etag)
    assert response.status_code == 200
    assert response.json()["max_queriers_per_tenant"] == 3
    refused = editor_api.put(URL, body, content_type=media, HTTP_IF_MATCH=response["ETag"])
    assert refused.status_code == 415


def test_patch_needs_if_match_and_a_current_one(editor_api, rules):
    etag = _create(editor_api, rules)
    assert editor_api.patch(URL, {"max_queriers_per_tenant": 1}, format="json").status_code == 428
    editor_api.patch(URL, {"max_queriers_per_tenant": 1}, format="json", HTTP_IF_MATCH=etag)
    stale = editor_api.patch(URL, {"max_queriers_per_tenant": 2}, format="json", HTTP_IF_MATCH=etag)
    assert stale.status_code == 412


def test_patch_and_delete_of_a_missing_tenant_are_404(editor_api):
    assert editor_api.patch(URL, {}, format="json", HTTP_IF_MATCH='"1"').status_code == 404
    assert editor_api.delete(URL, HTTP_IF_MATCH='"1"').status_code == 404
    assert editor_api.get(URL).status_code == 404


def test_delete_needs_the_current_etag(editor_api, rules):
    etag = _create(editor_api, rules)
    assert editor_api.delete(URL).status_code == 428
    assert editor_api.delete(URL, HTTP_IF_MATCH='"12345"').status_code == 412
    assert editor_api.delete(URL, HTTP_IF_MATCH=etag).status_code == 204
    assert editor_api.get(URL).status_code == 404


def test_an_invalid_regex_is_400_at_its_exact_field_and_changes_nothing(editor_api, rules):
    etag = _create(editor_api, rules)
    bad = copy.deepcopy(rules)
    bad["query_priority"]["priorities"].append(
        {"priority": 2, "query_attributes": [{"regex": "(unclosed"}]}
    )
    response = editor_api.put(URL, bad, format="json", HTTP_IF_MATCH=etag)
    assert response.status_code == 400
    errors = response.json()
    messages = errors["query_priority"]["priorities"]["1"]["query_attributes"]["0"]["regex"]
    assert len(messages) == 1 and "RE2" in messages[0]
    after = editor_api.get(URL)
    assert after.json() == rules and after["ETag"] == etag


def test_every_error_of_a_body_is_reported_at_once(editor_api):
    body = {
        "max_queriers_per_tenant": -1,
        "bogus": 1,
        "query_priority": {"enabled": "yes", "priorities": [{"query_attributes": []}]},
    }
    errors = editor_api.put(URL, body, format="json").json()
    assert errors["bogus"] == ["unknown field"]
    assert "must be >= 0" in errors["max_queriers_per_tenant"][0]
    assert "true or false" in errors["query_priority"]["enabled"][0]
    first = errors["query_priority"]["priorities"]["0"]
    assert first["priority"] == ["required"]
    assert "must not be empty" in first["query_attributes"][0]


def test_a_bad_duration_names_its_field(editor_api):
    body = {
        "query_priority": {
            "enabled": True,
            "priorities": [{"priority": 1, "query_attributes": [{"time_window": {"start": "2x"}}]}],
        }
    }
    errors = editor_api.put(URL, body, format="json").json()
    attr = errors["query_priority"]["priorities"]["0"]["query_attributes"]["0"]
    assert "not a valid duration" in attr["time_window"]["start"][0]


def test_size_limits_have_clear_messages(editor_api):
    many = [{"priority": i, "query_attributes": [{"regex": "x"}]} for i in range(101)]
    errors = editor_api.put(
        URL, {"query_priority": {"enabled": True, "priorities": many}}, format="json"
    ).json()
    assert "at most 100 priorities" in errors["query_priority"]["priorities"][0]
    long_regex = {"priority": 1, "query_attributes": [{"regex": "a" * 1001}]}
    errors = editor_api.put(
        URL, {"query_priority": {"priorities": [long_regex]}}, format="json"
    ).json()
    regex_errors = errors["query_priority"]["priorities"]["0"]["query_attributes"]["0"]["regex"]
    assert "at most 1000" in regex_errors[0]


def test_a_body_over_the_limit_is_413(editor_api):
    huge = json.dumps({"x": "a" * MAX_JSON_BODY_BYTES})
    response = editor_api.put(URL, huge, content_type="application/json")
    assert response.status_code == 413
    assert str(MAX_JSON_BODY_BYTES) in response.json()["detail"]


def test_a_bad_tenant_id_is_400_on_tenant_id(editor_api):
    response = editor_api.put("/api/v1/tenants/bad%20id/", {}, format="json")
    assert response.status_code == 400
    assert "invalid characters" in response.json()["tenant_id"][0]


def test_malformed_json_and_other_media_types_are_refused(editor_api):
    assert editor_api.put(URL, "{", content_type="application/json").status_code == 400
    assert editor_api.put(URL, "a=1", content_type="text/plain").status_code == 415
    for escape in ("\\ud800", "\\u0000"):
        body = '{"query_priority": {"priorities": [{"priority": 1, "query_attributes": '
        body += '[{"regex": "a' + escape + '"}]}]}}'
        response = editor_api.put(URL, body, content_type="application/json")
        assert response.status_code == 400
        assert "text" in response.json()["detail"]


@pytest.mark.parametrize("content_type", ["application/json", "text/plain"])
def test_a_put_or_patch_without_a_body_is_400_and_changes_nothing(editor_api, rules, content_type):
    """DRF read the missing body as {}: the tenant's whole block was wiped, with a 200."""
    created = editor_api.put(URL, rules, format="json")
    etag = created["ETag"]
    for method in (editor_api.put, editor_api.patch):
        response = method(URL, b"", content_type=content_type, HTTP_IF_MATCH=etag)
        assert response.status_code == 400
        assert "a body is required" in response.json()["detail"]
    assert editor_api.get(URL).json() == rules
    missing = editor_api.put("/api/v1/tenants/new-one/", b"", content_type=content_type)
    assert missing.status_code == 400


def test_a_non_object_body_is_a_non_field_error(editor_api):
    response = editor_api.put(URL, [1, 2], format="json")
    assert response.status_code == 400
    assert "mapping" in response.json()["non_field_errors"][0]


def test_the_list_is_paged_and_filtered_by_name(editor_api, rules):
    for name in ("alpha", "beta", "alphabet"):
        _create(editor_api, rules, f"/api/v1/tenants/{name}/")
    page = editor_api.get("/api/v1/tenants/", {"limit": 2}).json()
    assert page["count"] == 3
    assert [row["tenant_id"] for row in page["results"]] == ["alpha", "alphabet"]
    assert page["next"]
    found = editor_api.get("/api/v1/tenants/", {"search": "ALPHA"}).json()
    assert [row["tenant_id"] for row in found["results"]] == ["alpha", "alphabet"]
    assert found["results"][0]["config"] == rules


def test_a_null_anywhere_in_a_block_is_the_field_unset_and_is_not_stored(editor_api):
    # As Cortex's loader reads it; some fields were refused, others stored
    # as null and exported as `regex: null`.
    block = {
        "max_queriers_per_tenant": None,
        "max_query_capacity": None,
        "query_priority": {
            "enabled": True,
            "default_priority": None,
            "priorities": [{"priority": 1, "query_attributes": [{"regex": "a", "api_type": None}]}],
        },
        "query_rejection": {"enabled": None, "query_attributes": None},
    }
    response = editor_api.put(URL, block, format="json")
    assert response.status_code == 201, response.content
    stored = {
        "query_priority": {
            "enabled": True,
            "priorities": [{"priority": 1, "query_attributes": [{"regex": "a"}]}],
        },
        "query_rejection": {},
    }
    assert response.json() == stored == Tenant.objects.get(tenant_id="t1").config
    assert "null" not in editor_api.get("/api/v1/runtime-config/").content.decode()


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("not json at all", "application/json"),
        ('{"max_queriers_per_tenant": 3}', "application/json"),
    ],
)
def test_a_delete_with_a_body_is_400_and_deletes_nothing(editor_api, rules, body, content_type):
    etag = _create(editor_api, rules)
    response = editor_api.generic(
        "DELETE", URL, body, content_type=content_type, HTTP_IF_MATCH=etag
    )
    assert response.status_code == 400, response.content
    assert Tenant.objects.filter(tenant_id="t1").exists()


def test_a_delete_with_an_empty_object_or_no_body_deletes(editor_api, rules):
    etag = _create(editor_api, rules)
    response = editor_api.generic(
        "DELETE", URL, "{}", content_type="application/json", HTTP_IF_MATCH=etag
    )
    assert response.status_code == 204
    _create(editor_api, rules)
    assert editor_api.delete(URL, HTTP_IF_MATCH="*").status_code == 204


def test_an_imported_block_is_stored_and_exported_without_its_nulls(editor_api):
    text = "overrides:\n  t3:\n    max_queriers_per_tenant: null\n    query_rejection: ~\n"
    text += "    max_query_capacity: 0.5\n"
    response = editor_api.put(
        "/api/v1/runtime-config/", text, content_type="application/yaml", HTTP_IF_MATCH="*"
    )
    assert response.status_code == 200, response.content
    assert editor_api.get("/api/v1/tenants/t3/").json() == {"max_query_capacity": 0.5}
    assert "null" not in editor_api.get("/api/v1/runtime-config/").content.decode()
