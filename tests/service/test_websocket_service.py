"""The websocket protocol against a real Daphne process with real clients."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import websockets

from loadgen.daphne_process import DaphneProcess
from loadgen.wsclients import QuerierClient, ws_connect

NOW = time.time()


@pytest.fixture(scope="module")
def tokens(daphne_server: DaphneProcess) -> dict[str, str]:
    roles = ("frontend", "querier")
    return dict(zip(roles, daphne_server.issue_tokens(*roles), strict=True))


def set_tenant(server: DaphneProcess, tenant: str, config: dict[str, Any]) -> None:
    """Write a tenant through the services, in another process (as an editor would)."""
    server.run_python(
        "from api.store.models import Tenant\n"
        "from api.store.services import tenant_put\n"
        f"tid, cfg = {tenant!r}, {config!r}\n"
        "if Tenant.objects.filter(tenant_id=tid).exists():\n"
        "    tenant_put(tenant_id=tid, config=cfg, author=None, source='cli',\n"
        "               expected_version=Tenant.objects.get(tenant_id=tid).version)\n"
        "else:\n"
        "    tenant_put(tenant_id=tid, config=cfg, expected_version=None,\n"
        "               author=None, source='cli')\n"
    )


class Frontend:
    """A frontend socket: immediate replies and later outcomes kept apart.

    Outcomes (`result`, `failed`) may arrive between a request and its
    acknowledgement, so they go to their own queue.
    """

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.replies: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.outcomes: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        async for raw in self.ws:
            msg = json.loads(raw)
            late = msg["type"] in ("result", "failed")
            await (self.outcomes if late else self.replies).put(msg)

    async def outcome(self, timeout: float = 10.0) -> dict[str, Any]:
        return await asyncio.wait_for(self.outcomes.get(), timeout)

    async def send(self, msg: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(msg))

    async def reply(self, timeout: float = 10.0) -> dict[str, Any]:
        return await asyncio.wait_for(self.replies.get(), timeout)

    async def enqueue(
        self, rid: Any, tenant: str, query: str = "up", **extra: Any
    ) -> dict[str, Any]:
        msg = {"type": "enqueue", "id": rid, "tenant": tenant, "query": query}
        msg.update({"start": NOW - 600, "end": NOW, "step": 15} | extra)
        await self.send(msg)
        return await self.reply()

    async def close(self) -> None:
        await self.ws.close()
        self.reader.cancel()


@pytest.fixture
async def frontend(daphne_server: DaphneProcess, tokens: dict[str, str]) -> AsyncIterator[Frontend]:
    ws = await ws_connect(f"{daphne_server.ws_url}/ws/frontend/", tokens["frontend"])
    client = Frontend(ws)
    yield client
    await client.close()


@pytest.fixture
async def queriers(
    daphne_server: DaphneProcess, tokens: dict[str, str]
) -> AsyncIterator[Callable[..., Any]]:
    started: list[QuerierClient] = []

    async def start(querier_id: str, **kwargs: Any) -> QuerierClient:
        client = QuerierClient(
            f"{daphne_server.ws_url}/ws/querier/", tokens["querier"], querier_id, **kwargs
        )
        await client.start()
        started.append(client)
        return client

    yield start
    for client in started:
        await client.close()


async def until_applied(frontend: Frontend, tenant: str, priority: int) -> None:
    """Probe until the server's reconcile loop applied the tenant's new rules."""
    deadline = time.monotonic() + 15
    n = 0
    while True:
        n += 1
        reply = await frontend.enqueue(f"probe-{n}", tenant, "probe")
        if reply["type"] == "enqueued":
            await frontend.send({"type": "cancel", "id": f"probe-{n}"})
            assert (await frontend.reply())["type"] == "cancelled"
            if reply["priority"] == priority:
                return
        assert time.monotonic() < deadline, f"config of {tenant} never applied: {reply}"
        await asyncio.sleep(0.2)


async def results(frontend: Frontend, count: int) -> list[dict[str, Any]]:
    got = [await frontend.outcome() for _ in range(count)]
    assert all(r["type"] == "result" for r in got), got
    return got


def test_health_and_metrics_answer_over_http(daphne_server: DaphneProcess) -> None:
    assert urllib.request.urlopen(f"{daphne_server.base_url}/healthz").status == 200
    text = urllib.request.urlopen(f"{daphne_server.base_url}/metrics").read().decode()
    assert "cortex_query_scheduler_connected_querier_clients" in text


async def test_shard_limits_and_reserved_queriers_decide_who_serves_whom(
    daphne_server: DaphneProcess, frontend: Frontend, queriers: Any
) -> None:
    shard_one = {
        "max_queriers_per_tenant": 1,
        "query_priority": {"enabled": True, "default_priority": 7},
    }
    reserved = {
        "query_priority": {
            "enabled": True,
            "default_priority": 1,
            "priorities": [
                {"priority": 5, "reserved_queriers": 1, "query_attributes": [{"regex": "urgent"}]}
            ],
        }
    }
    set_tenant(daphne_server, "svc-sharded", shard_one)
    set_tenant(daphne_server, "svc-reserved", reserved)
    await until_applied(frontend, "svc-sharded", 7)
    await until_applied(frontend, "svc-reserved", 1)
    await queriers("svc-q1")
    await queriers("svc-q2")
    for n in range(8):
        assert (await frontend.enqueue(f"s{n}", "svc-sharded"))["priority"] == 7
    served = {r["querier"] for r in await results(frontend, 8)}
    assert len(served) == 1  # one querier in the shard
    # svc-q1 (first in ID order) is reserved for priority >= 5 of svc-reserved.
    for n in range(8):
        assert (await frontend.enqueue(f"low{n}", "svc-reserved"))["priority"] == 1
    assert {r["querier"] for r in await results(frontend, 8)} == {"svc-q2"}
    reply = await frontend.enqueue("hot", "svc-reserved", "urgent_query")
    assert reply["priority"] == 5
    assert (await results(frontend, 1))[0]["id"] == "hot"


async def test_two_tenants_get_their_results_back(frontend: Frontend, queriers: Any) -> None:
    await queriers("svc-two")
    for n in range(5):
        await frontend.enqueue(f"a{n}", "svc-tenant-a")
        await frontend.enqueue(
            f"b{n}", "svc-tenant-b", "rate(x[5m])", start=NOW - 3 * 86400, end=NOW - 2 * 86400
        )
    got = await results(frontend, 10)
    assert sorted(r["id"] for r in got) == sorted(
        [f"a{n}" for n in range(5)] + [f"b{n}" for n in range(5)]
    )
    assert all(r["body"] == "served by svc-two" and r["status"] == 200 for r in got)


async def test_beyond_the_outstanding_limit_requests_are_rejected_with_429(
    frontend: Frontend,
) -> None:
    for n in range(100):  # the default limit, with no querier to take them
        assert (await frontend.enqueue(n, "svc-limited"))["type"] == "enqueued"
    reply = await frontend.enqueue(100, "svc-limited")
    assert reply == {
        "type": "rejected",
        "id": 100,
        "status": 429,
        "error": "too many outstanding requests",
    }


async def test_cancel_is_acknowledged_and_counted(
    daphne_server: DaphneProcess, frontend: Frontend
) -> None:
    await frontend.enqueue("x", "svc-cancel")
    await frontend.send({"type": "cancel", "id": "x"})
    assert await frontend.reply() == {"type": "cancelled", "id": "x"}
    text = urllib.request.urlopen(f"{daphne_server.base_url}/metrics").read().decode()
    assert 'cortex_query_scheduler_cancelled_requests_total{user="svc-cancel"} 1.0' in text


async def test_a_querier_lost_twice_mid_request_fails_the_request_back(
    daphne_server: DaphneProcess, tokens: dict[str, str], frontend: Frontend
) -> None:
    url = f"{daphne_server.ws_url}/ws/querier/"
    await frontend.enqueue("fragile", "svc-fragile")
    for querier_id in ("svc-vanish-1", "svc-vanish-2"):
        ws = await ws_connect(url, tokens["querier"])
        await ws.send(json.dumps({"type": "hello", "querier_id": querier_id, "workers": 4}))
        assert json.loads(await ws.recv())["type"] == "welcome"
        request = json.loads(await asyncio.wait_for(ws.recv(), 10))
        assert request["tenant"] == "svc-fragile"
        await ws.close()  # gone without a result
    failed = await frontend.outcome()
    assert failed["type"] == "failed" and failed["id"] == "fragile"
    assert "svc-vanish-2 disconnected" in failed["error"]


async def test_malformed_json_gets_an_error_and_the_socket_keeps_working(
    frontend: Frontend,
) -> None:
    await frontend.ws.send("{this is not json")
    error = await frontend.reply()
    assert (error["type"], error["status"], error["field"]) == ("error", 400, None)
    assert (await frontend.enqueue("after", "svc-malformed"))["type"] == "enqueued"


@pytest.mark.parametrize("token", [None, "qi_wrong"])
async def test_a_missing_or_wrong_token_is_refused(
    daphne_server: DaphneProcess, token: str | None
) -> None:
    url = f"{daphne_server.ws_url}/ws/frontend/" + (f"?token={token}" if token else "")
    with pytest.raises(websockets.InvalidStatus) as refused:
        await websockets.connect(url)
    assert refused.value.response.status_code == 403


@pytest.mark.parametrize("path", ["/ws/relay/querier/", "/ws/made-up/"])
async def test_a_websocket_path_nobody_serves_is_a_403_not_an_application_error(
    daphne_server: DaphneProcess, tokens: dict[str, str], path: str
) -> None:
    log_start = len(daphne_server.log_path.read_text(errors="replace"))
    # The token for the machine door, an allowed origin for the browser's.
    headers = {"Authorization": f"Bearer {tokens['frontend']}", "Origin": daphne_server.base_url}
    with pytest.raises(websockets.InvalidStatus) as refused:
        await websockets.connect(f"{daphne_server.ws_url}{path}", additional_headers=headers)
    assert refused.value.response.status_code == 403
    log = daphne_server.log_path.read_text(errors="replace")[log_start:]
    assert "Exception inside application" not in log and "Traceback" not in log


async def test_a_querier_token_cannot_act_as_a_frontend(
    daphne_server: DaphneProcess, tokens: dict[str, str]
) -> None:
    with pytest.raises(websockets.InvalidStatus):
        await ws_connect(f"{daphne_server.ws_url}/ws/frontend/", tokens["querier"])


async def test_a_config_change_applies_without_restart_while_requests_wait(
    daphne_server: DaphneProcess, frontend: Frontend, queriers: Any
) -> None:
    tenant = "svc-live"
    set_tenant(
        daphne_server,
        tenant,
        {
            "max_outstanding_requests_per_tenant": 2,
            "query_priority": {"enabled": True, "default_priority": 2},
        },
    )
    await until_applied(frontend, tenant, 2)
    assert (await frontend.enqueue("w1", tenant))["type"] == "enqueued"
    assert (await frontend.enqueue("w2", tenant))["type"] == "enqueued"
    assert (await frontend.enqueue("w3", tenant))["status"] == 429
    set_tenant(
        daphne_server,
        tenant,
        {
            "max_outstanding_requests_per_tenant": 5,
            "query_priority": {"enabled": True, "default_priority": 3},
        },
    )
    deadline = time.monotonic() + 15
    while (reply := await frontend.enqueue("w3", tenant))["type"] == "rejected":
        assert time.monotonic() < deadline, "the raised limit never reached the server"
        await asyncio.sleep(0.2)
    assert reply["priority"] == 3  # the new rules, for the new request
    await queriers("svc-live-q")
    assert sorted(r["id"] for r in await results(frontend, 3)) == ["w1", "w2", "w3"]


async def test_a_database_gone_under_a_running_server_is_said_with_a_close_it_can_send() -> None:
    """The token check's 503 ends with 4503: Daphne refuses RFC 6455's 1013 (it sent 1000)."""
    with DaphneProcess(grpc=False) as server:
        (token,) = server.issue_tokens("frontend")
        database = server.tmp / "db.sqlite3"
        database.unlink()
        database.mkdir()  # "unable to open database file" for every new connection
        ws = await ws_connect(f"{server.ws_url}/ws/frontend/", token)
        frame = json.loads(await asyncio.wait_for(ws.recv(), 10))
        assert (frame["type"], frame["status"]) == ("error", 503)
        with pytest.raises(websockets.ConnectionClosed):
            await asyncio.wait_for(ws.recv(), 10)
        assert ws.close_code == 4503
        assert "invalid close code" not in server.log_path.read_text()
