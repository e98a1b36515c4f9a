"""Clients for the REST API tests: by token (editor, viewer), by session, anonymous.

Imports run in-process here: a worker process could not see the test
database (tests/api/rest/test_rest_daphne_import_worker.py covers the worker).
"""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from api.cluster import replica_board
from api.cluster.replica_board import ReplicaBoard
from api.store.services import api_token_issue


@pytest.fixture(autouse=True)
def _imports_in_process(settings: Any) -> None:
    settings.CONFIG_IMPORT_IN_WORKER_PROCESS = False


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


@pytest.fixture
def board(monkeypatch: pytest.MonkeyPatch) -> ReplicaBoard:
    """This process's replica board, as replica "replica-a" (scale-out views read it)."""
    board = ReplicaBoard("replica-a")
    monkeypatch.setattr(replica_board, "_board", board)
    return board
