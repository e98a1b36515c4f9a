"""Against a real Daphne: a change through the API reaches the running scheduler.

No restart and no reload call: the write commits, the runtime host applies
it, and the live queue snapshot (served by the same process) shows it.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from loadgen.daphne_process import DaphneProcess


@pytest.fixture(scope="module")
def server() -> Iterator[DaphneProcess]:
    process = DaphneProcess(grpc=False, extra_env={"LOG_LEVEL": "WARNING"})
    with process:
        yield process


def _call(
    server: DaphneProcess, token: str, method: str, path: str, body: Any = None, **headers: str
) -> tuple[int, dict[str, str], Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        server.base_url + path,
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read() or b"null")


def _tenant_row(server: DaphneProcess, token: str, tenant: str) -> dict[str, Any] | None:
    status, _, body = _call(server, token, "GET", f"/api/v1/queue/?search={tenant}")
    assert status == 200 and body["running"] is True
    return next((row for row in body["tenants"] if row["tenant_id"] == tenant), None)


def _eventually(check: Any, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def test_a_tenant_change_through_the_api_reaches_the_running_scheduler(server):
    token = server.issue_token("editor")
    block = {"max_queriers_per_tenant": 0, "max_outstanding_requests_per_tenant": 7}
    status, headers, _ = _call(server, token, "PUT", "/api/v1/tenants/live-1/", block)
    assert status == 201

    row = _eventually(
        lambda: (_tenant_row(server, token, "live-1") or {}).get("max_outstanding") == 7
    )
    assert row, "the running scheduler never saw the new tenant"

    patch = {"max_outstanding_requests_per_tenant": 3}
    status, _, _ = _call(
        server, token, "PATCH", "/api/v1/tenants/live-1/", patch, **{"If-Match": headers["ETag"]}
    )
    assert status == 200
    changed = _eventually(
        lambda: (_tenant_row(server, token, "live-1") or {}).get("max_outstanding") == 3
    )
    assert changed, "the running scheduler kept the old limit"


def test_a_rejected_write_leaves_the_running_scheduler_alone(server):
    token = server.issue_token("editor", "editor-2")
    block = {"max_outstanding_requests_per_tenant": 5}
    status, headers, _ = _call(server, token, "PUT", "/api/v1/tenants/live-2/", block)
    assert status == 201
    assert _eventually(
        lambda: (_tenant_row(server, token, "live-2") or {}).get("max_outstanding") == 5
    )
    bad = {"max_outstanding_requests_per_tenant": 0}
    status, _, errors = _call(
        server, token, "PUT", "/api/v1/tenants/live-2/", bad, **{"If-Match": headers["ETag"]}
    )
    assert status == 400 and "max_outstanding_requests_per_tenant" in errors
    assert (_tenant_row(server, token, "live-2") or {}).get("max_outstanding") == 5


def test_a_428_is_named_on_the_status_line_not_unknown_status(server):
    # Twisted knows no phrase for 422, 428 or 429: Daphne sent "Unknown Status".
    token = server.issue_token("editor", "editor-3")
    assert _call(server, token, "PUT", "/api/v1/tenants/live-3/", {})[0] == 201
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    connection.request("PUT", "/api/v1/tenants/live-3/", body=b"{}", headers=headers)
    response = connection.getresponse()
    assert (response.status, response.reason) == (428, "Precondition Required")
    connection.close()
