"""Mistakes a careless operator makes against the REST API: each a 400 that
names what was wrong, and nothing written (found by a sweep against Daphne)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from api.store import selectors
from api.store.models import ConfigRevision, Tenant
from api.store.services import api_token_issue

URL = "/api/v1/tenants/t1/"


@pytest.fixture
def edited_twice(editor_api, rules) -> ConfigRevision:
    """t1 created with `rules`, then changed; returns the change's revision."""
    created = editor_api.put(URL, rules, format="json")
    editor_api.patch(
        URL, {"max_queriers_per_tenant": 7}, format="json", HTTP_IF_MATCH=created["ETag"]
    )
    return ConfigRevision.objects.order_by("-version").first()


def _state() -> tuple[int, dict]:
    return selectors.config_version_get(), Tenant.objects.get(tenant_id="t1").config


def test_a_repeated_dry_run_parameter_is_a_400_and_rolls_nothing_back(editor_api, edited_twice):
    before = _state()
    response = editor_api.post(f"/api/v1/revisions/{edited_twice.pk}/rollback/?dry_run=1&dry_run=0")
    assert response.status_code == 400
    assert response.json() == {"dry_run": ["given 2 times; give it once"]}
    assert _state() == before


@pytest.mark.parametrize(
    "query",
    ["limit=abc&limit=1", "limit=1&limit=1", "search=a&search=b", "offset=0&limit=5&offset=1"],
)
def test_a_query_parameter_given_twice_is_a_400_naming_it(editor_api, edited_twice, query):
    response = editor_api.get(f"/api/v1/tenants/?{query}")
    assert response.status_code == 400
    (name,) = response.json()
    assert query.count(f"{name}=") == 2


def test_a_repeated_parameter_from_an_anonymous_caller_is_still_a_401(anon_api):
    assert anon_api.get("/api/v1/tenants/?limit=1&limit=2").status_code == 401


def test_a_parameter_the_operation_does_not_take_is_a_400_naming_it_and_the_ones_it_does(
    editor_api,
):
    # The listing filters by `tenant`; `tenant_id` used to answer every tenant's rows.
    response = editor_api.get("/api/v1/queue/requests/?tenant_id=acme")
    assert response.status_code == 400
    (message,) = response.json()["tenant_id"]
    assert message.startswith("not a parameter of this operation; this operation takes ")
    assert message.endswith(", state, tenant")
    assert editor_api.get("/api/v1/queue/requests/?tenant=acme").status_code == 200


def test_an_operation_that_takes_no_parameter_says_so(editor_api):
    response = editor_api.get("/api/v1/settings/?verbose=1")
    assert response.status_code == 400
    assert response.json() == {"verbose": ["not a parameter of this operation; it takes none"]}


def test_a_misspelt_dry_run_on_a_rollback_is_refused_and_rolls_nothing_back(
    editor_api, edited_twice
):
    before = _state()
    response = editor_api.post(f"/api/v1/revisions/{edited_twice.pk}/rollback/?dryrun=1")
    assert response.status_code == 400
    assert list(response.json()) == ["dryrun"]
    assert _state() == before


def test_drfs_format_parameter_is_still_read_everywhere(editor_api, edited_twice):
    assert editor_api.get("/api/v1/tenants/?format=json").status_code == 200
    assert editor_api.get("/api/v1/settings/?format=json").status_code == 200


def test_an_unknown_parameter_from_an_anonymous_caller_is_still_a_401(anon_api):
    assert anon_api.get("/api/v1/tenants/?nonsense=1").status_code == 401


def test_a_rollback_with_dry_run_in_its_body_is_refused_and_changes_nothing(
    editor_api, edited_twice
):
    before = _state()
    url = f"/api/v1/revisions/{edited_twice.pk}/rollback/"
    response = editor_api.post(url, {"dry_run": True}, format="json")
    assert response.status_code == 400
    assert "dry_run is a query parameter" in response.json()["dry_run"][0]
    for body in (b"[]", b'"yes"', b"null"):
        refused = editor_api.generic("POST", url, body, content_type="application/json")
        assert refused.status_code == 400, body
        assert refused.json() == {
            "non_field_errors": ['a rollback takes no body but {"note": "<change note>"}']
        }
    assert _state() == before


def test_a_rollback_s_note_ends_its_revision_s_message(editor_api, edited_twice):
    url = f"/api/v1/revisions/{edited_twice.pk}/rollback/"
    response = editor_api.post(url, {"note": "  undo the 7: it starved t2  "}, format="json")
    assert response.status_code == 201
    message = response.json()["revision"]["message"]
    assert message == f"rollback of revision #{edited_twice.version}: undo the 7: it starved t2"


def test_a_rollback_note_too_long_or_not_text_is_refused_at_note_and_changes_nothing(
    editor_api, edited_twice
):
    before = _state()
    url = f"/api/v1/revisions/{edited_twice.pk}/rollback/"
    for note, says in ((["x"], "must be text"), ("x" * 465, "at most 464 characters (it has 465)")):
        response = editor_api.post(url, {"note": note, "dryrun": 1}, format="json")
        assert response.status_code == 400, note
        assert says in response.json()["note"][0]
        assert "unknown field" in response.json()["dryrun"][0]  # every field at once
    assert _state() == before


def test_a_rollback_with_an_empty_object_or_no_body_still_rolls_back(editor_api, edited_twice):
    url = f"/api/v1/revisions/{edited_twice.pk}/rollback/"
    assert editor_api.post(url, {}, format="json").status_code == 201
    assert Tenant.objects.get(tenant_id="t1").config.get("max_queriers_per_tenant") != 7
    assert editor_api.post(url).status_code == 200  # already the state from before


@pytest.mark.parametrize("body", [b"null", b""])
def test_a_settings_patch_of_null_or_of_nothing_is_a_400(editor_api, body):
    version = selectors.config_version_get()
    response = editor_api.generic(
        "PATCH", "/api/v1/settings/", body, content_type="application/json", HTTP_IF_MATCH="*"
    )
    assert response.status_code == 400
    message = response.json().get("non_field_errors") or [response.json()["detail"]]
    assert "must be a mapping" in message[0] or "a body is required" in message[0]
    assert selectors.config_version_get() == version


def test_a_dry_run_without_a_body_is_a_400_not_a_dry_run_of_the_empty_block(
    editor_api, edited_twice
):
    response = editor_api.post("/api/v1/tenants/t1/dry-run/")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("a body is required")


def test_a_json_integer_of_thousands_of_digits_is_refused_without_pythons_advice(editor_api):
    body = b'{"max_queriers_per_tenant": ' + b"9" * 5000 + b"}"
    response = editor_api.generic("PUT", URL, body, content_type="application/json")
    assert response.status_code == 400
    # Where it is, as every other JSON parse error says (it named no place).
    assert response.json() == {
        "detail": "JSON parse error: an integer of 5000 digits at line 1 column 29 "
        "(char 28); the limit is 4300 digits"
    }
    assert not Tenant.objects.filter(tenant_id="t1").exists()


def test_a_long_integer_is_found_past_strings_and_fractions_that_hold_long_digit_runs(
    editor_api,
):
    digits = b"7" * 4400
    body = b'{"a": "' + digits + b'", "b": 1.' + digits + b',\n "c": -' + digits + b"}"
    response = editor_api.generic("PUT", URL, body, content_type="application/json")
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert detail.startswith("JSON parse error: an integer of 4400 digits at line 2 column 7 ")


def test_a_frontend_token_reading_is_told_a_read_needs_the_viewer_role(db):
    _, plaintext = api_token_issue(name="fe", role="frontend")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    read = client.get("/api/v1/tenants/")
    assert read.status_code == 403
    assert read.json() == {"detail": "this needs the viewer or editor role"}
    write = client.put(URL, {}, format="json")
    assert write.json() == {"detail": "this needs the editor role"}
