"""`kill -9` of a real Daphne mid-writes, then a restart on the same database.

The fault: a server killed with SIGKILL runs no cleanup. What must hold:
nothing it started keeps running (the runtime-config import worker and
multiprocessing's resource tracker exit on their own within a bound), and
a new server on the same database serves every write the killed one had
acknowledged, both through the API and in its running scheduler.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from loadgen.daphne_process import DaphneProcess
from tests.processes import descendants, process_alive

# Generous for a loaded 2-core machine; the watchdog polls every 0.5 s and
# the kernel's parent-death signal is immediate.
ORPHAN_BOUND_SECONDS = 20.0
IMPORTED = 5


def _call(server: DaphneProcess, token: str, method: str, path: str, body: Any = None,
          **headers: str) -> tuple[int, dict[str, str], bytes]:  # fmt: skip
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        server.base_url + path,
        data=data,
        method=method,
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/yaml" if isinstance(body, bytes) else "application/json",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def _import_file() -> bytes:
    lines = ["overrides:"]
    for n in range(IMPORTED):
        lines += [f"  imported-{n}:", f"    max_outstanding_requests_per_tenant: {10 + n}"]
    return ("\n".join(lines) + "\n").encode()


class Writer(threading.Thread):
    """Creates tenants one by one until stopped; remembers which were acknowledged."""

    def __init__(self, server: DaphneProcess, token: str) -> None:
        super().__init__(daemon=True)
        self.server, self.token = server, token
        self.acknowledged: dict[str, int] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            tenant, limit = f"written-{n}", 20 + n % 50
            try:
                status, _, _ = _call(
                    self.server, self.token, "PUT", f"/api/v1/tenants/{tenant}/",
                    {"max_outstanding_requests_per_tenant": limit},
                )  # fmt: skip
            except OSError:
                return  # the server is gone: this write was never acknowledged
            if status == 201:
                self.acknowledged[tenant] = limit
            n += 1


def _eventually(check: Any, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return value


def test_kill_9_leaves_no_process_behind_and_a_restart_serves_every_acknowledged_write():
    first = DaphneProcess(grpc=False, extra_env={"LOG_LEVEL": "WARNING"})
    second: DaphneProcess | None = None
    try:
        first.start()
        token = first.issue_token("editor")
        status, _, raw = _call(first, token, "PUT", "/api/v1/runtime-config/", _import_file())
        assert status == 200, raw  # ran in the worker process, which now exists
        status, headers, _ = _call(first, token, "GET", "/api/v1/settings/")
        status, _, raw = _call(
            first, token, "PATCH", "/api/v1/settings/", {"max_outstanding_requests_per_tenant": 42},
            **{"If-Match": headers["ETag"]},
        )  # fmt: skip
        assert status == 200, raw
        assert first.proc is not None
        helpers = descendants(first.proc.pid)
        assert len(helpers) >= 2, f"expected the import worker and its tracker, got {helpers}"

        writer = Writer(first, token)
        writer.start()
        assert _eventually(lambda: len(writer.acknowledged) >= 20), "the writer made no progress"
        first.proc.kill()  # SIGKILL, mid-write
        first.proc.wait(10)
        writer.stop.set()
        writer.join(30)

        deadline = time.monotonic() + ORPHAN_BOUND_SECONDS
        while any(process_alive(pid) for pid in helpers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [pid for pid in helpers if process_alive(pid)] == [], "orphans left running"

        second = DaphneProcess(
            grpc=False,
            extra_env={"LOG_LEVEL": "WARNING", "DATABASE_URL": first.env["DATABASE_URL"]},
        )
        second.start()
        # The token issued before the kill is one more stored write it must serve.
        for tenant, limit in writer.acknowledged.items():
            status, _, raw = _call(second, token, "GET", f"/api/v1/tenants/{tenant}/")
            assert status == 200, (tenant, raw)
            assert json.loads(raw) == {"max_outstanding_requests_per_tenant": limit}
        for n in range(IMPORTED):
            status, _, raw = _call(second, token, "GET", f"/api/v1/tenants/imported-{n}/")
            assert json.loads(raw) == {"max_outstanding_requests_per_tenant": 10 + n}
        _, _, raw = _call(second, token, "GET", "/api/v1/settings/")
        assert json.loads(raw)["max_outstanding_requests_per_tenant"] == 42

        # The new server's running scheduler has them too, not only its database.
        last = max(writer.acknowledged, key=lambda t: int(t.rsplit("-", 1)[1]))

        def scheduler_limit() -> Any:
            _, _, raw = _call(second, token, "GET", f"/api/v1/queue/?search={last}")
            rows = json.loads(raw)["tenants"]
            return next((r["max_outstanding"] for r in rows if r["tenant_id"] == last), None)

        assert _eventually(lambda: scheduler_limit() == writer.acknowledged[last])
        status, _, raw = _call(second, token, "PUT", "/api/v1/runtime-config/", _import_file(),
                               **{"If-Match": "*"})  # fmt: skip
        assert status == 200, raw  # a fresh worker serves the restarted server
    finally:
        # The second server uses the first one's database: stop it first.
        if second is not None:
            second.cleanup()
        first.cleanup()
