"""A replica lists the frontends connected to it, with what they have pending."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from typing import Any

import pytest
import websockets

from loadgen.daphne_process import DaphneProcess
from loadgen.wsclients import ws_connect


def get_json(server: DaphneProcess, path: str, token: str) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{server.base_url}{path}", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


async def test_a_connected_websocket_frontend_is_listed_with_its_queued_requests(
    daphne_server: DaphneProcess,
) -> None:
    frontend_token = daphne_server.issue_token("frontend", "listed-frontend")
    viewer_token = daphne_server.issue_token("viewer")
    ws = await ws_connect(f"{daphne_server.ws_url}/ws/frontend/", frontend_token)
    now = time.time()
    # No querier serves this tenant's requests, so they stay queued.
    for rid in (1, 2):
        await ws.send(
            json.dumps(
                {
                    "type": "enqueue",
                    "id": rid,
                    "tenant": "listed-tenant",
                    "query": "up",
                    "start": now - 600,
                    "end": now,
                    "step": 15,
                }
            )
        )
        assert json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] == "enqueued"

    body = await asyncio.to_thread(get_json, daphne_server, "/api/v1/queriers/", viewer_token)
    mine = [row for row in body["frontends"] if row["name"] == "listed-frontend"]
    assert len(mine) == 1
    assert mine[0]["transport"] == "websocket"
    assert mine[0]["outstanding"] == 2

    await ws.close()
    for _ in range(50):
        body = await asyncio.to_thread(get_json, daphne_server, "/api/v1/queriers/", viewer_token)
        if not any(row["name"] == "listed-frontend" for row in body["frontends"]):
            break
        await asyncio.sleep(0.1)
    assert not any(row["name"] == "listed-frontend" for row in body["frontends"])


async def test_a_named_frontends_two_sockets_are_listed_as_one_frontend_with_two_streams(
    daphne_server: DaphneProcess,
) -> None:
    frontend_token = daphne_server.issue_token("frontend", "named-frontend")
    viewer_token = daphne_server.issue_token("viewer")
    url = f"{daphne_server.ws_url}/ws/frontend/?frontend=edge-7"
    sockets = [await ws_connect(url, frontend_token) for _ in range(2)]
    try:
        now = time.time()
        enqueue = {"type": "enqueue", "id": 1, "tenant": "named-tenant", "query": "up"}
        await sockets[1].send(json.dumps(enqueue | {"start": now - 600, "end": now, "step": 15}))
        assert json.loads(await asyncio.wait_for(sockets[1].recv(), 10))["type"] == "enqueued"

        body = await asyncio.to_thread(get_json, daphne_server, "/api/v1/queriers/", viewer_token)
        mine = [row for row in body["frontends"] if row["name"] == "named-frontend"]
        assert [(r["address"], r["streams"], r["outstanding"]) for r in mine] == [("edge-7", 2, 1)]
        # Its request names the frontend as the panel does.
        path = "/api/v1/queue/requests/?tenant=named-tenant"
        queued = await asyncio.to_thread(get_json, daphne_server, path, viewer_token)
        assert [row["frontend"]["address"] for row in queued["results"]] == ["edge-7"]
    finally:
        for ws in sockets:
            await ws.close()


async def test_a_bad_frontend_name_is_told_which_field_then_closed_and_never_listed(
    daphne_server: DaphneProcess,
) -> None:
    frontend_token = daphne_server.issue_token("frontend", "badly-named")
    viewer_token = daphne_server.issue_token("viewer")
    ws = await ws_connect(f"{daphne_server.ws_url}/ws/frontend/?frontend=two+words", frontend_token)
    error = json.loads(await asyncio.wait_for(ws.recv(), 10))
    assert error["type"] == "error"
    assert error["field"] == "frontend"
    assert error["status"] == 400
    with pytest.raises(websockets.ConnectionClosed) as closed:
        await asyncio.wait_for(ws.recv(), 10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4400

    body = await asyncio.to_thread(get_json, daphne_server, "/api/v1/queriers/", viewer_token)
    assert not any(row["name"] == "badly-named" for row in body["frontends"])
