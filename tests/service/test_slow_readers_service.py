"""A websocket frontend that stops reading its results, against a real Daphne.

It keeps sending (so Daphne's keepalive never pings it) and reads nothing;
its results would pile up in the server's memory for as long as it stayed.
The server drops it once its unsent backlog has stayed over the limit for
the grace (config.slow_readers, set low here); a frontend beside it that
reads the same large results is kept and gets every one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import websockets

from loadgen.daphne_process import DaphneProcess
from loadgen.wsclients import ws_connect

BODY = "r" * 600_000  # within a websocket querier's 1,000,000 characters
CONNECTED = re.compile(r"^cortex_query_scheduler_connected_frontend_clients (\S+)$", re.MULTILINE)


@pytest.fixture(scope="module")
def server() -> Iterator[DaphneProcess]:
    limits = {
        "WEBSOCKET_UNSENT_LIMIT_BYTES": str(1024 * 1024),
        "WEBSOCKET_SLOW_READER_SECONDS": "1",
    }
    with DaphneProcess(grpc=False, extra_env=limits) as daphne:
        yield daphne


def connected_frontends(server: DaphneProcess) -> int:
    with urllib.request.urlopen(f"{server.base_url}/metrics", timeout=10) as response:
        found = CONNECTED.search(response.read().decode())
    assert found is not None
    return int(float(found.group(1)))


def enqueue(rid: int, tenant: str) -> str:
    return json.dumps({"type": "enqueue", "id": rid, "tenant": tenant, "query": "up"})


async def serve_big_results(ws: Any) -> None:
    """One worker, a result every 20 ms (30 MB/s): a reader in this process keeps up."""
    async for raw in ws:
        msg = json.loads(raw)
        if msg.get("type") == "request":
            await asyncio.sleep(0.02)
            result = {"type": "result", "worker": msg["worker"], "id": msg["id"], "status": 200}
            await ws.send(json.dumps({**result, "body": BODY}))


async def test_a_frontend_that_never_reads_is_dropped_and_one_that_reads_is_kept(
    server: DaphneProcess,
) -> None:
    frontend_token, querier_token = server.issue_tokens("frontend", "querier")
    querier = await ws_connect(f"{server.ws_url}/ws/querier/", querier_token)
    await querier.send(json.dumps({"type": "hello", "querier_id": "q-big", "workers": 1}))
    assert json.loads(await querier.recv())["type"] == "welcome"
    serving = asyncio.create_task(serve_big_results(querier))
    # Reads nothing: past one queued frame the client stops taking bytes off
    # the socket, and the server's sends back up.
    stalled = await websockets.connect(
        f"{server.ws_url}/ws/frontend/?token={frontend_token}",
        max_queue=1,
        ping_interval=None,
        max_size=None,
    )
    reader = await ws_connect(f"{server.ws_url}/ws/frontend/", frontend_token)
    results: set[int] = set()

    async def read_results() -> None:
        async for raw in reader:
            msg = json.loads(raw)
            if msg["type"] == "result":
                assert msg["status"] == 200 and msg["body"] == BODY
                results.add(msg["id"])

    reading = asyncio.create_task(read_results())
    try:
        for rid in range(60):  # 36 MB of results each, far over what the sockets buffer
            await stalled.send(enqueue(rid, "stall"))
            await reader.send(enqueue(rid, "read"))
        deadline = time.monotonic() + 60
        rid = 60
        while await asyncio.to_thread(connected_frontends, server) != 1 or len(results) < 60:
            assert time.monotonic() < deadline, (len(results), server.log())
            with contextlib.suppress(websockets.ConnectionClosed):
                await stalled.send(enqueue(rid, "stall"))  # a sign of life for Daphne
                rid += 1
            await asyncio.sleep(0.2)
        assert "left a backlog of" in server.log()
        assert not reading.done()  # the reader is still connected
    finally:
        serving.cancel()
        reading.cancel()
        for ws in (stalled, reader, querier):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(), 5)
