"""Clients for the REST API tests: by token (editor, viewer), by session, anonymous."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from api.services import api_token_issue


def _token_client(role: str) -> APIClient:
    _, plaintext = api_token_issue(name=f"{role}-bot", role=role)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    return client


@pytest.fixture
def editor_api(db: None) -> APIClient:
    return _token_client("editor")


@pytest.fixture
def viewer_api(db: None) -> APIClient:
    return _token_client("viewer")


@pytest.fixture
def anon_api(db: None) -> APIClient:
    return APIClient()
