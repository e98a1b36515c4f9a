"""No shared cache keeps a page, an API answer or a scrape; static files stay cacheable."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from api.store.services import api_token_issue

pytestmark = pytest.mark.django_db

PRIVATE = "private, no-cache"


@pytest.fixture
def signed_in(editor: Any) -> Client:
    client = Client()
    client.force_login(editor)
    return client


@pytest.mark.parametrize("path", ["/", "/tenants/", "/history/", "/api/v1/tenants/", "/metrics"])
def test_a_signed_in_answer_is_private_and_asked_for_again(signed_in: Client, path: str) -> None:
    response = signed_in.get(path)
    assert response.status_code == 200, path
    assert response["Cache-Control"] == PRIVATE


def test_an_answer_to_a_token_is_private_too() -> None:
    _, token = api_token_issue(name="cache-check", role="editor")
    response = Client().get("/api/v1/tenants/", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200
    assert response["Cache-Control"] == PRIVATE


def test_a_refusal_is_private_too() -> None:
    response = Client().get("/api/v1/tenants/")
    assert response.status_code in (401, 403)
    assert response["Cache-Control"] == PRIVATE


@pytest.mark.parametrize("path", ["/login/", "/admin/login/"])
def test_a_view_with_its_own_policy_keeps_it(path: str) -> None:
    # Django's login views are never_cache: stricter than ours, and left as they are.
    response = Client().get(path)
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
