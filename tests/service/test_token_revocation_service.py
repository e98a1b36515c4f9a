"""Against a real Daphne: revoking a token closes the sockets already open with it.

The token is revoked from another process (`manage.py revoke_token`, as an
operator's script would), so no in-process notice reaches the server: only
its reconcile loop (every 0.5 s here) can find the revocation, which is the
bound the server promises on every replica.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
import websockets

from loadgen.daphne_process import DaphneProcess
from loadgen.wsclients import ws_connect

NOW = time.time()
# Many reconcile intervals, for a loaded machine; the socket closes at the first.
BOUND_SECONDS = 15.0


def _revoke(server: DaphneProcess, name: str) -> None:
    printed = server.manage("revoke_token", "--name", f"revocation-{name}")
    assert printed.startswith("Revoked "), printed


async def _closed_for_revocation(ws: Any) -> tuple[list[dict[str, Any]], int | None]:
    """Every message until the close, and the close code."""
    seen: list[dict[str, Any]] = []
    try:
        async with asyncio.timeout(BOUND_SECONDS):
            async for raw in ws:
                seen.append(json.loads(raw))
    except websockets.ConnectionClosed:
        pass
    return seen, ws.close_code


@pytest.fixture
def tokens(daphne_server: DaphneProcess) -> dict[str, str]:
    return {
        name: daphne_server.issue_token(role, name=f"revocation-{name}")
        for name, role in (("frontend", "frontend"), ("querier", "querier"), ("kept", "frontend"))
    }


async def test_revoking_a_token_closes_its_open_frontend_and_querier_sockets(
    daphne_server: DaphneProcess, tokens: dict[str, str]
) -> None:
    base = daphne_server.ws_url
    frontend = await ws_connect(f"{base}/ws/frontend/", tokens["frontend"])
    kept = await ws_connect(f"{base}/ws/frontend/", tokens["kept"])
    querier = await ws_connect(f"{base}/ws/querier/", tokens["querier"])
    try:
        await querier.send(json.dumps({"type": "hello", "querier_id": "q-rev", "workers": 4}))
        assert json.loads(await querier.recv())["type"] == "welcome"
        enqueue = {"type": "enqueue", "id": 1, "tenant": "revocation", "query": "up",
                   "start": NOW - 60, "end": NOW, "step": 15}  # fmt: skip
        await frontend.send(json.dumps(enqueue))
        assert json.loads(await frontend.recv())["type"] == "enqueued"

        _revoke(daphne_server, "frontend")
        seen, code = await _closed_for_revocation(frontend)
        assert code == 4001
        assert seen[-1]["type"] == "error" and seen[-1]["error"] == "token revoked"

        _revoke(daphne_server, "querier")
        seen, code = await _closed_for_revocation(querier)
        assert code == 4001
        assert seen[-1]["error"] == "token revoked"

        # The other frontend's socket still works.
        await kept.send(json.dumps(enqueue | {"id": 2}))
        assert json.loads(await kept.recv())["type"] == "enqueued"
        # And the revoked token opens nothing new.
        with pytest.raises(websockets.InvalidStatus):
            await ws_connect(f"{base}/ws/frontend/", tokens["frontend"])
    finally:
        for ws in (frontend, kept, querier):
            await ws.close()
