"""Who may call the REST API: 401 anonymous, 403 viewers writing, CSRF on sessions."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone
from rest_framework.test import APIClient

from api.rest import auth
from api.store.models import ApiToken
from api.store.services import api_token_issue, api_token_revoke

READS = [
    "/api/v1/tenants/",
    "/api/v1/settings/",
    "/api/v1/queue/",
    "/api/v1/queriers/",
    "/api/v1/runtime-config/",
    "/api/v1/revisions/",
    "/api/v1/schema/",
]


@pytest.mark.parametrize("url", READS)
def test_anonymous_callers_get_401_with_a_bearer_challenge(anon_api, url):
    response = anon_api.get(url)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("url", READS)
def test_viewers_may_read_everything(viewer_api, url):
    assert viewer_api.get(url).status_code == 200


def test_viewers_may_not_write(viewer_api, rules):
    assert viewer_api.put("/api/v1/tenants/t1/", rules, format="json").status_code == 403
    yaml_body = "overrides: {}\n"
    response = viewer_api.put("/api/v1/runtime-config/", yaml_body, content_type="application/yaml")
    assert response.status_code == 403
    assert viewer_api.post("/api/v1/revisions/1/rollback/").status_code == 403


def test_viewers_may_explain_because_it_changes_nothing(viewer_api):
    response = viewer_api.post("/api/v1/explain/", {"tenant": "t1", "query": "up"}, format="json")
    assert response.status_code == 200


def test_querier_and_revoked_tokens_have_no_rest_role(db):
    token, plaintext = api_token_issue(name="q", role="querier")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {plaintext}")
    assert client.get("/api/v1/tenants/").status_code == 403
    api_token_revoke(token_id=token.pk)
    assert client.get("/api/v1/tenants/").status_code == 401


def test_session_writes_need_the_csrf_token(editor, rules):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(editor)
    assert client.get("/api/v1/tenants/").status_code == 200
    refused = client.put("/api/v1/tenants/t1/", rules, format="json")
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]
    client.get("/api/v1/settings/")
    page = client.get("/admin/login/")
    token = page.cookies["csrftoken"].value
    accepted = client.put("/api/v1/tenants/t1/", rules, format="json", HTTP_X_CSRFTOKEN=token)
    assert accepted.status_code == 201


def test_an_expired_token_is_refused_like_a_revoked_one(db):
    token, plaintext = api_token_issue(
        name="v", role="viewer", expires_at=timezone.now() + timedelta(hours=1)
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    assert client.get("/api/v1/tenants/").status_code == 200
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now())
    refused = client.get("/api/v1/tenants/")
    assert refused.status_code == 401
    assert refused["WWW-Authenticate"].startswith("Bearer")
    assert refused.json() == {"detail": "invalid, revoked or expired token"}


def test_a_database_that_does_not_answer_is_a_503_to_retry_not_a_server_error(
    viewer_api, monkeypatch
):
    def down(plaintext: str) -> None:
        raise OperationalError("could not connect to server: Connection refused")

    monkeypatch.setattr(auth, "api_token_authenticate", down)
    response = viewer_api.get("/api/v1/tenants/")
    assert response.status_code == 503
    assert response.json() == {"detail": "the database did not answer; try again shortly"}
    assert response["Retry-After"] == "5"


@pytest.mark.parametrize("value", ["\xa0", "\u2003", "\x1c", "  "])
def test_an_authorization_header_of_whitespace_alone_is_a_401_not_a_server_error(
    db: None, value: str
) -> None:
    response = APIClient(raise_request_exception=False).get(
        "/api/v1/tenants/", HTTP_AUTHORIZATION=value
    )
    assert response.status_code == 401


@pytest.mark.parametrize("method", ["TRACE", "PROPFIND", "DELETE"])
@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/tenants/",
        "/api/v1/queue/",
        "/api/v1/revisions/",
        "/api/v1/schema/",
        "/api/v1/schema/swagger-ui/",
        "/api/v1/schema/redoc/",
    ],
)
def test_a_method_an_endpoint_lacks_is_405_to_a_viewer_and_an_editor_alike(
    viewer_api, editor_api, anon_api, method, path
):
    # A viewer was told "this needs the editor role", as if an editor could.
    for client in (viewer_api, editor_api):
        assert client.generic(method, path).status_code == 405
    assert anon_api.generic(method, path).status_code == 401
