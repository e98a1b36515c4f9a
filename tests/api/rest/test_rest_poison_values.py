"""Poison values on the REST API: deep nesting, values Cortex cannot load, duplicate keys.

Each answers 400 naming the field or the limit, never a 500, and changes
nothing; explain refuses exactly the request times enqueue refuses.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver

from api.rest import urls as rest_urls
from api.store.models import ConfigRevision, Tenant
from api.wire.protocol import FRONTEND_PARSERS, ProtocolError, parse
from scheduler_core.bounds import MAX_DOCUMENT_DEPTH, MAX_TENANT_ID_LENGTH

pytestmark = pytest.mark.django_db

DEEP_JSON = b'{"a":' * 990 + b"1" + b"}" * 990
DEEPER_JSON = b"[" * 5_000 + b"]" * 5_000
LIMIT_TEXT = f"the limit is {MAX_DOCUMENT_DEPTH}"


def _routes(patterns: list[Any], prefix: str = "/api/v1/") -> list[str]:
    """Every REST route, path parameters filled with a plausible value."""
    found = []
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            continue
        assert isinstance(pattern, URLPattern)
        route = str(pattern.pattern).lstrip("^").rstrip("$").removesuffix("\\Z")
        route = re.sub(r"\(\?P<[^>]+>[^)]*\)|<[^>]+>", "t-1", route)
        found.append(prefix + route)
    return found


ROUTES = _routes(rest_urls.urlpatterns)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("method", ["post", "put", "patch"])
@pytest.mark.parametrize("body", [DEEP_JSON, DEEPER_JSON], ids=["990-levels", "5000-levels"])
def test_no_endpoint_answers_a_500_for_deep_nesting(
    editor_api: Any, route: str, method: str, body: bytes
) -> None:
    response = getattr(editor_api, method)(
        route, body, content_type="application/json", HTTP_IF_MATCH='"1"'
    )
    # Not every route takes a body (a 405, a 404 for the sample ID, a 428 for
    # the If-Match), but none fails, and one that reads it names the limit.
    assert response.status_code < 500, (route, method, response.content[:200])
    if response.status_code == 400:
        assert response["Content-Type"].startswith("application/json"), (route, method)
        assert LIMIT_TEXT in response.content.decode(), (route, method, response.content[:200])


@pytest.mark.parametrize(
    ("method", "route"),
    [
        ("put", "/api/v1/tenants/t-1/"),
        ("patch", "/api/v1/settings/"),
        ("post", "/api/v1/explain/"),
        ("put", "/api/v1/runtime-config/"),
    ],
)
def test_a_body_nested_too_deep_is_refused_naming_the_limit(
    editor_api: Any, method: str, route: str
) -> None:
    headers = {"HTTP_IF_MATCH": '"1"'} if route.endswith("settings/") else {}
    response = getattr(editor_api, method)(
        route, DEEP_JSON, content_type="application/json", **headers
    )
    assert response.status_code == 400
    assert LIMIT_TEXT in response.json()["detail"]
    assert not Tenant.objects.exists()


def test_a_yaml_file_nested_too_deep_is_refused(editor_api: Any) -> None:
    body = "overrides:\n  t: " + "[" * 500 + "]" * 500 + "\n"
    response = editor_api.put("/api/v1/runtime-config/", body, content_type="application/yaml")
    assert response.status_code == 400
    assert f"deeper than {MAX_DOCUMENT_DEPTH} levels" in response.json()["detail"]


@pytest.mark.parametrize(
    ("body", "path"),
    [
        (
            "overrides:\n  team-a:\n    query_priority:\n      enabled: true\n"
            "      enabled: false\n",
            "overrides.team-a.query_priority.enabled",
        ),
        (
            "overrides:\n  team-a: {}\n  team-a:\n    max_queriers_per_tenant: 2\n",
            "overrides.team-a",
        ),
        (
            "overrides:\n  t:\n    query_priority:\n      priorities:\n      - priority: 1\n"
            "        priority: 2\n",
            "overrides.t.query_priority.priorities[0].priority",
        ),
    ],
)
def test_an_imported_yaml_file_with_a_duplicate_key_is_refused_with_its_path(
    editor_api: Any, body: str, path: str
) -> None:
    response = editor_api.put("/api/v1/runtime-config/", body, content_type="application/yaml")
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert f"duplicate key {path} " in detail
    assert not Tenant.objects.exists()
    assert not ConfigRevision.objects.exists()


def test_a_json_body_with_a_name_given_twice_is_refused_naming_it(editor_api: Any) -> None:
    body = '{"overrides": {"team-a": {"max_outstanding_per_tenant": 5}, "team-a": {}}}'
    response = editor_api.put("/api/v1/runtime-config/", body, content_type="application/json")
    assert response.status_code == 400
    assert "duplicate key 'team-a' in one object" in response.json()["detail"]
    assert not Tenant.objects.exists()


def test_a_yaml_tenant_key_is_its_text_as_cortex_reads_it(editor_api: Any) -> None:
    """`0123` was the int 83 (merged with tenant "83"); `true` and `1.50` were refused."""
    body = "overrides:\n  0123: {}\n  83: {}\n  true: {}\n  1.50: {}\n  0x1F: {}\n"
    response = editor_api.put("/api/v1/runtime-config/", body, content_type="application/yaml")
    assert response.status_code == 200, response.content
    assert sorted(Tenant.objects.values_list("tenant_id", flat=True)) == [
        "0123",
        "0x1F",
        "1.50",
        "83",
        "true",
    ]


def test_yaml_keys_clash_by_their_text_not_their_value(editor_api: Any) -> None:
    same = "overrides:\n  1: {}\n  '1': {}\n"
    response = editor_api.put("/api/v1/runtime-config/", same, content_type="application/yaml")
    assert response.status_code == 400
    assert "duplicate key overrides.1 " in response.json()["detail"]
    distinct = "overrides:\n  1: {}\n  01: {}\n"
    response = editor_api.put("/api/v1/runtime-config/", distinct, content_type="application/yaml")
    assert response.status_code == 200, response.content
    assert sorted(Tenant.objects.values_list("tenant_id", flat=True)) == ["01", "1"]


@pytest.mark.parametrize(
    ("url", "method", "body"),
    [
        (
            "/api/v1/runtime-config/",
            "put",
            b'{"overrides": {"a": {}, "a": {"max_queriers_per_tenant": 2}}}',
        ),
        (
            "/api/v1/tenants/a/",
            "put",
            b'{"max_queriers_per_tenant": 1, "max_queriers_per_tenant": 3}',
        ),
    ],
)
def test_a_json_body_naming_a_key_twice_is_refused_naming_it(
    editor_api: Any, url: str, method: str, body: bytes
) -> None:
    response = getattr(editor_api, method)(url, body, content_type="application/json")
    assert response.status_code == 400
    assert "duplicate key" in response.json()["detail"]
    assert not Tenant.objects.exists()
    assert not ConfigRevision.objects.exists()


def test_a_merge_key_may_be_overridden_as_yaml_allows(editor_api: Any) -> None:
    body = (
        "base: &base\n  max_queriers_per_tenant: 1\n"
        "overrides:\n  t:\n    <<: *base\n    max_queriers_per_tenant: 3\n"
    )
    response = editor_api.put(
        "/api/v1/runtime-config/?dry_run=1", body, content_type="application/yaml"
    )
    assert response.status_code == 200, response.content


def test_an_impossible_yaml_date_is_a_400_not_a_500(editor_api: Any) -> None:
    # Tagged: a plain 2024-13-45 is the text "2024-13-45", as Go reads it.
    response = editor_api.put(
        "/api/v1/runtime-config/",
        "overrides: {}\nwhen: !!timestamp 2024-13-45\n",
        content_type="text/yaml",
    )
    assert response.status_code == 400
    assert "cannot be read" in response.json()["detail"]


@pytest.mark.parametrize("scalar", ["!!int ''", "!!bool ''", "!!timestamp x", "!!float ''"])
def test_a_tagged_scalar_its_type_cannot_read_is_a_400_not_a_500(
    editor_api: Any, scalar: str
) -> None:
    # PyYAML's constructors raise IndexError, KeyError or AttributeError here.
    body = f"overrides:\n  t:\n    max_queriers_per_tenant: {scalar}\n"
    response = editor_api.put("/api/v1/runtime-config/", body, content_type="text/yaml")
    assert response.status_code == 400, response.content
    assert "cannot read" in response.json()["detail"]
    assert "line 3" in response.json()["detail"]


@pytest.mark.parametrize(
    "value", [1e308, "99999999999999999h", 2**70, 10**30], ids=["1e308", "17h", "2**70", "10**30"]
)
def test_a_time_window_cortex_cannot_load_is_a_400_at_its_path(editor_api: Any, value: Any) -> None:
    block = {
        "query_priority": {
            "enabled": True,
            "priorities": [
                {"priority": 1, "query_attributes": [{"time_window": {"start": value}}]}
            ],
        }
    }
    response = editor_api.put("/api/v1/tenants/poison/", block, format="json")
    assert response.status_code == 400
    errors = response.json()["query_priority"]["priorities"]["0"]["query_attributes"]["0"]
    assert "out of range" in errors["time_window"]["start"][0]
    assert not Tenant.objects.exists()


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"querier_forget_delay": 1e308}, "querier_forget_delay"),
        ({"priority_aging": "99999999999999999h"}, "priority_aging"),
        ({"max_outstanding_requests_per_tenant": 2**70}, "max_outstanding_requests_per_tenant"),
    ],
)
def test_settings_cortex_cannot_load_are_a_400_naming_the_field(
    editor_api: Any, changes: dict[str, Any], field: str
) -> None:
    etag = editor_api.get("/api/v1/settings/")["ETag"]
    response = editor_api.patch("/api/v1/settings/", changes, format="json", HTTP_IF_MATCH=etag)
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert editor_api.get("/api/v1/settings/")["ETag"] == etag  # nothing changed


def test_reserved_queriers_of_1e300_are_refused(editor_api: Any) -> None:
    block = {
        "query_priority": {
            "enabled": True,
            "priorities": [
                {"priority": 1, "reserved_queriers": 1e300, "query_attributes": [{"regex": "x"}]}
            ],
        }
    }
    response = editor_api.put("/api/v1/tenants/poison/", block, format="json")
    assert response.status_code == 400
    assert "reserved_queriers" in response.json()["query_priority"]["priorities"]["0"]


def test_one_tenant_id_limit_everywhere(editor_api: Any) -> None:
    longest, too_long = "t" * MAX_TENANT_ID_LENGTH, "t" * (MAX_TENANT_ID_LENGTH + 1)
    assert editor_api.put(f"/api/v1/tenants/{longest}/", {}, format="json").status_code == 201
    refused = editor_api.put(f"/api/v1/tenants/{too_long}/", {}, format="json")
    assert refused.status_code == 400
    assert "150" in str(refused.json())
    # The websocket takes exactly the IDs the REST API stores.
    message = {"type": "enqueue", "id": 1, "query": "up"}
    assert parse({**message, "tenant": longest}, FRONTEND_PARSERS).tenant == longest
    with pytest.raises(ProtocolError):
        parse({**message, "tenant": too_long}, FRONTEND_PARSERS)
    # So does explain.
    explain = editor_api.post("/api/v1/explain/", {"tenant": too_long}, format="json")
    assert explain.status_code == 400 and "tenant" in explain.json()


TIMES = [
    {"start": 200, "end": 100},
    {"start": 100, "end": 200, "step": 0},
    {"start": 100, "end": 200, "step": -5},
    {"start": -1e308, "end": 0},
    {"start": 10**30, "end": 10**31},
    {"start": 0, "end": 9223309901257976},
    {"start": 100, "end": 200, "step": 1e300},
    {"start": 100, "end": 200, "step": 15},
    {"start": 100, "end": 100},
    {"end": 100},
]


@pytest.mark.parametrize("times", TIMES)
def test_explain_refuses_exactly_the_request_times_enqueue_refuses(
    viewer_api: Any, times: dict[str, Any]
) -> None:
    try:
        parse({"type": "enqueue", "id": 1, "tenant": "t", **times}, FRONTEND_PARSERS)
        enqueue_field = None
    except ProtocolError as exc:
        enqueue_field = exc.field
    response = viewer_api.post(
        "/api/v1/explain/", {"tenant": "t", "api_type": "query_range", **times}, format="json"
    )
    if enqueue_field is None:
        assert response.status_code == 200, response.content
    else:
        assert response.status_code == 400
        assert enqueue_field in response.json(), (response.json(), enqueue_field)


HUGE = "9" * 5000


@pytest.mark.parametrize(
    ("url", "status"),
    [
        (f"/api/v1/queue/requests/?limit={HUGE}", 400),
        (f"/api/v1/revisions/{HUGE}/", 404),
        ("/api/v1/revisions/\u00b2/", 404),
        (f"/api/v1/revisions/compare/?from={HUGE}&to=1", 400),
        (f"/api/v1/queue/requests/?priority={HUGE}", 400),
        ("/api/v1/queue/requests/?priority=--5", 400),
        ("/api/v1/queue/requests/?priority=\u00b2", 400),
    ],
)
def test_an_integer_past_what_int_reads_is_a_client_error(
    editor_api: Any, url: str, status: int
) -> None:
    # isdigit() accepts "²" and int() raises past 4,300 digits: both were 500s.
    assert editor_api.get(url).status_code == status


def test_an_if_match_of_digits_int_cannot_read_matches_no_version(editor_api: Any) -> None:
    editor_api.put("/api/v1/tenants/t1/", {"max_queriers_per_tenant": 1}, format="json")
    for tag in ('"\u00b2"', f'"{HUGE}"'):
        response = editor_api.put(
            "/api/v1/tenants/t1/", {"max_queriers_per_tenant": 2}, format="json", HTTP_IF_MATCH=tag
        )
        assert response.status_code == 412, response.content
