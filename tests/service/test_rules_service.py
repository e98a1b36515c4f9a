"""Rejection, rule hit counts and dry runs on a real Daphne, both protocols at once.

A websocket frontend and a Cortex gRPC frontend send the same tenant's
queries; queriers of both protocols are connected. Rejected queries must be
answered 422 on each frontend and never reach either querier; the REST rule
stats count them and the dry run (in the real import worker process)
replays them.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from api.wire.grpc.clients import CortexFrontend, get_request
from loadgen.daphne_process import DaphneProcess
from loadgen.wsclients import ws_connect
from scheduler_core.pb import schedulerpb_pb2 as pb
from tests.service.test_websocket_service import Frontend, set_tenant

RANGE = "/prometheus/api/v1/query_range"
RULES: dict[str, Any] = {
    "query_priority": {
        "enabled": True,
        "default_priority": 0,
        "priorities": [{"priority": 5, "query_attributes": [{"regex": "errors"}]}],
    },
    "query_rejection": {"enabled": True, "query_attributes": [{"regex": "expensive"}]},
}


@pytest.fixture(scope="module")
def daphne_server() -> Iterator[DaphneProcess]:
    """A Daphne of this module's own: a querier here takes any tenant's work, so
    requests other tests leave on the shared server would reach it."""
    with DaphneProcess() as server:
        yield server


@pytest.fixture(scope="module")
def tokens(daphne_server: DaphneProcess) -> dict[str, str]:
    roles = ("frontend", "querier", "viewer")
    return dict(zip(roles, daphne_server.issue_tokens(*roles), strict=True))


def _api(server: DaphneProcess, token: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"{server.base_url}{path}",
        data=data,
        method="GET" if body is None else "POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


async def _until_rejecting(frontend: Frontend) -> None:
    """Config reaches the server by its reconcile loop: wait until it rejects."""
    deadline = time.monotonic() + 20
    n = 0
    while True:
        n += 1
        reply = await frontend.enqueue(f"probe-{n}", "svc-team", "expensive_probe")
        if reply["type"] == "rejected":
            return
        await frontend.send({"type": "cancel", "id": f"probe-{n}"})
        await frontend.reply()
        assert time.monotonic() < deadline, "the rejection rule never applied"
        await asyncio.sleep(0.2)


async def test_rejected_queries_get_422_on_both_protocols_and_never_reach_a_querier(
    daphne_server: DaphneProcess, tokens: dict[str, str]
) -> None:
    set_tenant(daphne_server, "svc-team", RULES)
    ws = await ws_connect(f"{daphne_server.ws_url}/ws/frontend/", tokens["frontend"])
    frontend = Frontend(ws)
    await _until_rejecting(frontend)
    querier_ws = await ws_connect(f"{daphne_server.ws_url}/ws/querier/", tokens["querier"])
    await querier_ws.send(json.dumps({"type": "hello", "querier_id": "ws-q", "workers": 4}))
    assert json.loads(await querier_ws.recv())["type"] == "welcome"
    grpc_frontend = await CortexFrontend(f"127.0.0.1:{daphne_server.grpc_port}").start()
    loop = await grpc_frontend.open_loop()

    # Rejected on both doors.
    reply = await frontend.enqueue("r1", "svc-team", "sum(rate(expensive_total[5m]))")
    assert (reply["type"], reply["status"]) == ("rejected", 422)
    assert "query_rejection.query_attributes[0]" in reply["error"]
    now = time.time()
    params = [("query", "expensive_total"), ("start", str(now - 600)), ("end", str(now))]
    params.append(("step", "15"))
    assert await loop.enqueue(7, "svc-team", get_request(RANGE, params)) == pb.OK
    result = await grpc_frontend.result(7, timeout=10)
    assert result.code == 422 and b"rejected by the service operator" in result.body

    # Accepted on both doors: the only requests the querier ever sees.
    assert (await frontend.enqueue("a1", "svc-team", "errors_total"))["priority"] == 5
    params[0] = ("query", "up")
    assert await loop.enqueue(8, "svc-team", get_request(RANGE, params)) == pb.OK
    seen = []
    for _ in range(2):
        msg = json.loads(await asyncio.wait_for(querier_ws.recv(), 10))
        seen.append(msg["query"])
        await querier_ws.send(
            json.dumps({"type": "result", "worker": msg["worker"], "id": msg["id"], "body": 1})
        )
    assert sorted(seen) == ["errors_total", "up"]
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(querier_ws.recv(), 0.5)

    stats = _api(daphne_server, tokens["viewer"], "/api/v1/tenants/svc-team/rule-stats/")
    assert stats["rejection"][0]["rejected"]["version"] >= 3  # probe + one per door
    assert stats["priorities"][0]["attributes"][0]["matched"]["version"] == 1
    assert stats["default"]["matched"]["version"] >= 1

    # The dry run runs in the import worker and writes nothing.
    draft = {"query_priority": RULES["query_priority"]}
    report = _api(daphne_server, tokens["viewer"], "/api/v1/tenants/svc-team/dry-run/", draft)
    changed = {(c["from"], c["to"]): c["count"] for c in report["changed"]}
    assert changed[("rejected", 0)] >= 3 and report["rejected"] == 0
    assert report["sample"] == report["unchanged"] + sum(changed.values())
    stored = _api(daphne_server, tokens["viewer"], "/api/v1/tenants/svc-team/")
    assert stored == RULES

    await grpc_frontend.close()
    await querier_ws.close()
    await frontend.close()
