"""Actor paths from both protocols reach the actor sub-queues of a real Daphne.

A websocket frontend sends `X-Loki-Actor-Path` in its enqueue's `headers`, a
Cortex gRPC frontend as a forwarded HTTP header; with no querier connected
the requests wait, and the REST queue view shows them under their actor
levels, the request listing filters by actor, and a querier then takes the
two actors' requests in turns.
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
import uuid
from collections.abc import AsyncIterator

import grpc
import pytest

from api.wire.grpc.clients import CortexFrontend, get_request
from loadgen.daphne_process import DaphneProcess
from loadgen.wsclients import QuerierClient, ws_connect
from scheduler_core.pb import schedulerpb_pb2 as pb
from tests.service.test_queue_requests_service import call
from tests.service.test_websocket_service import Frontend

RANGE = "/prometheus/api/v1/query_range"


@pytest.fixture(scope="module")
def tokens(daphne_server: DaphneProcess) -> dict[str, str]:
    return {
        role: daphne_server.issue_token(role, name=f"actors-{role}")
        for role in ("frontend", "querier", "viewer")
    }


@pytest.fixture
async def ws_frontend(
    daphne_server: DaphneProcess, tokens: dict[str, str]
) -> AsyncIterator[Frontend]:
    ws = await ws_connect(f"{daphne_server.ws_url}/ws/frontend/", tokens["frontend"])
    client = Frontend(ws)
    yield client
    await client.close()


@pytest.fixture
async def grpc_frontend(daphne_server: DaphneProcess) -> AsyncIterator[CortexFrontend]:
    target = f"127.0.0.1:{daphne_server.grpc_port}"
    async with grpc.aio.insecure_channel(target) as channel:
        await asyncio.wait_for(channel.channel_ready(), 20)
    fe = await CortexFrontend(target).start()
    yield fe
    await fe.close()


def recent() -> list[tuple[str, str]]:
    now = time.time()
    return [("query", "up"), ("start", str(now - 600)), ("end", str(now)), ("step", "15")]


async def test_actor_paths_from_both_protocols_appear_under_their_actor_levels(
    daphne_server: DaphneProcess,
    tokens: dict[str, str],
    ws_frontend: Frontend,
    grpc_frontend: CortexFrontend,
) -> None:
    tenant = f"loki-{uuid.uuid4().hex[:8]}"
    for n in range(2):
        reply = await ws_frontend.enqueue(
            f"w{n}", tenant, headers={"X-Loki-Actor-Path": "users|joe"}
        )
        assert reply["type"] == "enqueued", reply
    loop = await grpc_frontend.open_loop()
    request = get_request(RANGE, recent(), {"X-Loki-Actor-Path": "apps|grafana"})
    assert await loop.enqueue(1, tenant, request) == pb.OK

    status, queue = await call(daphne_server, tokens["viewer"], f"queue/?search={tenant}")
    assert status == 200, queue
    (row,) = [t for t in queue["tenants"] if t["tenant_id"] == tenant]
    (leaf,) = row["components"]
    actors = {"|".join(a["path"]): a["length"] for a in leaf["actors"]}
    assert actors == {"users": 2, "users|joe": 2, "apps": 1, "apps|grafana": 1}

    query = urllib.parse.urlencode({"tenant": tenant, "actor": "users"})
    status, listed = await call(daphne_server, tokens["viewer"], f"queue/requests/?{query}")
    assert status == 200, listed
    assert [r["actor"] for r in listed["results"]] == ["users|joe", "users|joe"]

    # One querier worker takes them in turns: joe, grafana, joe.
    seen: list[str] = []
    querier = QuerierClient(
        f"{daphne_server.ws_url}/ws/querier/",
        tokens["querier"],
        f"q-{tenant}",
        workers=1,
        on_request=lambda msg: seen.append(msg["actor"]),
    )
    await querier.start()
    try:
        deadline = time.monotonic() + 15
        while len(seen) < 3 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    finally:
        await querier.close()
    assert seen == ["users|joe", "apps|grafana", "users|joe"]
