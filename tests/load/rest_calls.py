"""The REST calls `rest_bench` makes, and the bodies it sends.

Tenant blocks with any number of priority rules (`tenant_with_rules`) and
Cortex runtime-config files of many tenants (`runtime_config_yaml`,
`scale_file`); one keep-alive connection with a bearer token (`Http`); a
whole-file import (`import_once`); single-tenant writes that each change
something (`SingleWriter`); and `call_loop`, the child process that makes
writes or GETs while the benchmark measures dispatch.
"""

from __future__ import annotations

import http.client
import json
import random
import time
from typing import Any

import yaml

__all__ = [
    "Http",
    "SingleWriter",
    "call_loop",
    "import_once",
    "runtime_config_yaml",
    "scale_file",
    "tenant_with_rules",
]


def tenant_with_rules(rules: int, variant: int) -> dict[str, Any]:
    """A tenant block with `rules` priorities of varied attributes; variants differ."""
    priorities = []
    for i in range(rules):
        attribute: dict[str, Any] = {"regex": f"metric_{i}_{variant}|special_{i}"}
        if i % 3 == 1:
            attribute["time_window"] = {"start": f"{i + 1}h", "end": "0h"}
        if i % 3 == 2:
            attribute.update(api_type="query_range", query_step_limit={"max": "1m"})
        priorities.append(
            {
                "priority": rules - i,
                "reserved_queriers": 1 if i == 0 else 0,
                "query_attributes": [attribute, {"user_agent_regex": f"^bot-{i}"}],
            }
        )
    return {
        "max_queriers_per_tenant": 4 + variant,
        "max_outstanding_requests_per_tenant": 100,
        "query_priority": {"enabled": True, "default_priority": 0, "priorities": priorities},
    }


def runtime_config_yaml(tenants: int, variant: int) -> bytes:
    """A Cortex runtime-config file: `tenants` tenants with 3 rules and other limits."""
    overrides = {}
    for n in range(tenants):
        block = tenant_with_rules(3, variant)
        block["ingestion_rate"] = 10_000  # a Cortex limit we ignore, as real files have
        overrides[f"bench-{n:04d}"] = block
    return yaml.safe_dump({"overrides": overrides}, sort_keys=False).encode()


class Http:
    """One keep-alive connection with a bearer token."""

    def __init__(self, port: int, token: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.token = token

    def call(
        self, method: str, path: str, body: bytes | None = None, **headers: str
    ) -> tuple[int, http.client.HTTPResponse, bytes]:
        all_headers = {"Authorization": f"Bearer {self.token}", **headers}
        self.conn.request(method, path, body=body, headers=all_headers)
        response = self.conn.getresponse()
        return response.status, response, response.read()


def import_once(client: Http, body: bytes) -> float:
    began = time.perf_counter()
    # If-Match "*": these imports replace whatever is there on purpose.
    status, _, raw = client.call(
        "PUT",
        "/api/v1/runtime-config/",
        body,
        **{"Content-Type": "application/yaml", "If-Match": "*"},
    )
    elapsed = time.perf_counter() - began
    assert status == 200, (status, raw[:300])
    return elapsed


def scale_file(tenants: int) -> bytes:
    """`tenants` tenants named as the dispatch phase's (`tenant-N`), 3 rules each."""
    overrides = {f"tenant-{n}": tenant_with_rules(3, 0) for n in range(tenants)}
    return yaml.safe_dump({"overrides": overrides}, sort_keys=False).encode()


class SingleWriter:
    """Single-tenant PUTs back to back, each a real change (variants alternate)."""

    def __init__(self, port: int, token: str, tenants: int, seed: int = 7) -> None:
        self.client = Http(port, token)
        self.tenants = tenants
        self.rng = random.Random(seed)
        self.variant: dict[int, int] = {}

    def write(self) -> float:
        n = self.rng.randrange(self.tenants)
        self.variant[n] = self.variant.get(n, 0) + 1
        body = json.dumps(tenant_with_rules(3, self.variant[n] % 2)).encode()
        began = time.perf_counter()
        status, _, raw = self.client.call(
            "PUT",
            f"/api/v1/tenants/tenant-{n}/",
            body,
            **{"Content-Type": "application/json", "If-Match": "*"},
        )
        elapsed = time.perf_counter() - began
        assert status == 200, (status, raw[:200])
        return elapsed


def call_loop(kind: str, port: int, token: str, rate: float | None, stop: Any, out: Any) -> None:
    """In a child process: single-tenant writes or GETs, paced or back to back.

    A process of its own, so its HTTP work does not share a GIL with the
    websocket clients that measure dispatch (in one process, the caller's
    own JSON and sockets inflated the very delay being measured).
    """
    writer = SingleWriter(port, token, 5000, seed=11)
    reader = Http(port, token)

    def read() -> float:
        began = time.perf_counter()
        status, _, _ = reader.call("GET", "/api/v1/tenants/tenant-1/")
        assert status == 200, status
        return time.perf_counter() - began

    action = writer.write if kind == "write" else read
    times: list[float] = []
    began = time.perf_counter()
    while not stop.is_set():
        times.append(action())
        if rate:
            # Paced on the schedule, not after each call, so a slow call
            # does not lower the rate.
            wait = began + len(times) / rate - time.perf_counter()
            if wait > 0:
                stop.wait(wait)
    out.put(times)
