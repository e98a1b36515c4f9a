"""Clients for the REST API tests: by token (editor, viewer), by session, anonymous.

Imports run in-process here: a worker process could not see the test
database (tests/api/rest/test_rest_daphne_import_worker.py covers the worker).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from rest_framework.test import APIClient

from api.cluster import replica_board
from api.cluster.replica_board import ReplicaBoard
from api.store.services import api_token_issue
from api.wire import runtime_host
from api.wire.usage_block import UsagePages
from scheduler_core.model import QueueConfig, Request
from scheduler_core.runtime import SchedulerRuntime
from scheduler_core.tenant_usage import TenantUsage
from tests.fakes import FakeClock


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


@pytest.fixture
def running(monkeypatch: pytest.MonkeyPatch) -> SchedulerRuntime:
    """A started runtime with one request queued for team-a; `runtime_host.get_host()`
    answers a stand-in host for it (its runtime and usage pages)."""
    clock = FakeClock(100.0)
    runtime = SchedulerRuntime(QueueConfig(), clock=clock)
    runtime.queue.enqueue(Request(id="r1", tenant_id="team-a", component="ingester"))
    usage = UsagePages(TenantUsage(clock=clock), runtime.queue, clock)
    host = SimpleNamespace(runtime=runtime, frontends=list, usage_block=usage.block)
    monkeypatch.setattr(runtime_host, "started", lambda: True)
    monkeypatch.setattr(runtime_host, "get_runtime", lambda: runtime)
    monkeypatch.setattr(runtime_host, "get_host", lambda: host)
    return runtime
