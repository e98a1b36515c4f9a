"""Against a real Daphne: a runtime-config import runs in the worker process.

The config reconcile loop is set to an hour, so the running scheduler can
only learn of an import through the publish the server process makes after
the worker commits: what the queue snapshot shows proves that hand-over.
"""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loadgen.daphne_process import DaphneProcess

URL = "/api/v1/runtime-config/"


@pytest.fixture(scope="module")
def server() -> Iterator[DaphneProcess]:
    env = {"LOG_LEVEL": "WARNING", "CONFIG_RECONCILE_SECONDS": "3600"}
    process = DaphneProcess(grpc=False, extra_env=env)
    with process:
        yield process


@pytest.fixture(scope="module")
def token(server: DaphneProcess) -> str:
    return server.issue_token("editor")


def _call(
    server: DaphneProcess,
    token: str,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
):
    request = urllib.request.Request(
        server.base_url + path,
        data=body,
        method=method,
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/yaml",
            **(headers or {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _etag(server: DaphneProcess, token: str) -> str:
    request = urllib.request.Request(
        server.base_url + URL, headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.headers["ETag"]


def _import(server: DaphneProcess, token: str, body: bytes, path: str = URL):
    """PUT a file with If-Match naming the export's current ETag, as a GitOps client does."""
    return _call(server, token, "PUT", path, body, {"If-Match": _etag(server, token)})


def _file(outstanding: int, regex: str = "special_.*", tenant: str = "worker-a") -> bytes:
    return (
        "overrides:\n"
        f"  {tenant}:\n"
        f"    max_outstanding_requests_per_tenant: {outstanding}\n"
        "    ingestion_rate: 1000\n"
        "    query_priority:\n"
        "      enabled: true\n"
        "      priorities:\n"
        "        - priority: 2\n"
        "          query_attributes:\n"
        f"            - regex: '{regex}'\n"
    ).encode()


def _scheduler_limit(server: DaphneProcess, token: str, tenant: str = "worker-a") -> Any:
    status, raw = _call(server, token, "GET", f"/api/v1/queue/?search={tenant}")
    body = json.loads(raw)
    assert status == 200 and body["running"] is True
    row = next((r for r in body["tenants"] if r["tenant_id"] == tenant), None)
    return None if row is None else row["max_outstanding"]


def _eventually(check: Any, timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return value


def _worker_pids(server: DaphneProcess) -> list[int]:
    """The server's spawned import workers (not multiprocessing's resource tracker)."""
    assert server.proc is not None
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == server.proc.pid and b"spawn_main" in cmdline:
            pids.append(int(entry.name))
    return pids


def test_an_import_runs_in_a_worker_and_reaches_the_running_scheduler(server, token):
    # A tenant no other test of the module imports: the module shares one server.
    tenant = "worker-first"
    assert _scheduler_limit(server, token, tenant) is None  # starts the runtime, not configured
    status, raw = _import(server, token, _file(7, tenant=tenant))
    assert status == 200, raw
    body = json.loads(raw)
    assert body["applied"] is True and body["created"] == [tenant]
    assert body["ignored"] == {tenant: ["ingestion_rate"]}
    assert len(_worker_pids(server)) == 1
    assert _eventually(lambda: _scheduler_limit(server, token, tenant) == 7)

    status, raw = _import(server, token, _file(8, tenant=tenant), URL + "?dry_run=1")
    assert status == 200 and json.loads(raw)["diffs"][tenant] == [
        {"path": "max_outstanding_requests_per_tenant", "before": 7, "after": 8}
    ]
    status, raw = _import(server, token, _file(8, tenant=tenant))
    assert status == 200 and json.loads(raw)["changed"] == [tenant]
    assert _eventually(lambda: _scheduler_limit(server, token, tenant) == 8)


def test_a_bad_regex_is_a_400_at_its_path_and_changes_nothing(server, token):
    _import(server, token, _file(5))
    assert _eventually(lambda: _scheduler_limit(server, token) == 5)
    _, exported = _call(server, token, "GET", URL)

    status, raw = _import(server, token, _file(6, regex="broken("))
    assert status == 400
    attribute = json.loads(raw)["overrides"]["worker-a"]["query_priority"]["priorities"]["0"]
    assert "RE2" in attribute["query_attributes"]["0"]["regex"][0]
    assert _call(server, token, "GET", URL)[1] == exported
    assert _scheduler_limit(server, token) == 5


def test_broken_yaml_is_a_400_from_the_worker(server, token):
    status, raw = _import(server, token, b"overrides: [unclosed")
    assert status == 400 and "YAML parse error" in json.loads(raw)["detail"]


def test_a_killed_worker_is_replaced_and_the_next_import_works(server, token):
    assert _import(server, token, _file(3))[0] == 200
    [old] = _worker_pids(server)
    os.kill(old, signal.SIGKILL)
    assert _eventually(lambda: not Path(f"/proc/{old}").exists()), "the pool never reaped it"

    status, raw = _import(server, token, _file(4))
    assert status == 200, raw
    assert json.loads(raw)["changed"] == ["worker-a"]
    assert _worker_pids(server) not in ([], [old])
    assert _eventually(lambda: _scheduler_limit(server, token) == 4)


def test_the_import_honours_if_match_against_a_real_server(server, token):
    assert _import(server, token, _file(9))[0] == 200
    stale = _etag(server, token)
    assert _import(server, token, _file(10))[0] == 200
    status, raw = _call(server, token, "PUT", URL, _file(11))
    assert status == 428, raw
    status, raw = _call(server, token, "PUT", URL, _file(11), {"If-Match": stale})
    assert status == 412, raw
    assert _eventually(lambda: _scheduler_limit(server, token) == 10)
