"""Against a real Daphne: a token issued for a bounded time stops working when that time is up.

Tokens are issued by `manage.py issue_token --expires-at` (as an operator
would) and really expire while the test waits: nothing tells the server, so
the socket open with one is closed by the reconcile's token check (every
0.5 s here) at the first round past the expiry, within the revocation
test's bound.

The lifetime is not a fixed guess: it is scaled from how long one
`manage.py` run just took, so an idle machine waits a few seconds and a
loaded one (where every run is slower) still has room before the expiry.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest
import websockets

from loadgen.daphne_process import DaphneProcess
from loadgen.wsclients import ws_connect
from tests.service.test_token_revocation_service import _closed_for_revocation

NOW = time.time()
# The two expiring tokens are issued side by side (at worst as long as two
# runs back to back on two busy cores), then two sockets and a REST call
# must fit before the expiry: four runs' time leaves a margin of about two,
# and the floor covers the connects when a run happens to be quick.
RUNS_OF_LIFETIME = 4
MIN_LIFETIME_SECONDS = 5.0


def _rest_status(server: DaphneProcess, token: str) -> int:
    request = urllib.request.Request(
        server.base_url + "/api/v1/tenants/", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


async def test_a_token_stops_working_at_its_expiry_and_its_open_socket_is_closed(
    daphne_server: DaphneProcess,
) -> None:
    started = time.monotonic()
    # A `manage.py` run, as the two below are (`issue_token` is quicker).
    kept = daphne_server.manage("issue_token", "expiry-kept", "--role", "frontend").strip()
    one_run = time.monotonic() - started
    deadline = time.time() + max(MIN_LIFETIME_SECONDS, RUNS_OF_LIFETIME * one_run)
    expires_at = datetime.fromtimestamp(deadline, UTC).isoformat()

    def issue(role: str) -> str:
        return daphne_server.manage(
            "issue_token", f"expiry-{role}", "--role", role, "--expires-at", expires_at
        ).strip()

    with ThreadPoolExecutor(2) as pool:
        frontend, viewer = pool.map(issue, ("frontend", "viewer"))
    base = daphne_server.ws_url

    ws = await ws_connect(f"{base}/ws/frontend/", frontend)
    kept_ws = await ws_connect(f"{base}/ws/frontend/", kept)
    try:
        enqueue = {"type": "enqueue", "id": 1, "tenant": "expiry", "query": "up",
                   "start": NOW - 60, "end": NOW, "step": 15}  # fmt: skip
        await ws.send(json.dumps(enqueue))
        assert json.loads(await ws.recv())["type"] == "enqueued"
        assert _rest_status(daphne_server, viewer) == 200
        assert time.time() < deadline, "too slow to test before the expiry"

        # The token really runs out: open until just before, closed soon after.
        await asyncio.sleep(max(0.0, deadline - time.time() - 0.3))
        assert ws.close_code is None
        seen, code = await _closed_for_revocation(ws)
        assert code == 4001 and seen[-1]["error"] == "token expired"

        # Refused at both doors as a revoked token is; others unaffected.
        assert _rest_status(daphne_server, viewer) == 401
        with pytest.raises(websockets.InvalidStatus):
            await ws_connect(f"{base}/ws/frontend/", frontend)
        await kept_ws.send(json.dumps(enqueue | {"id": 2}))
        assert json.loads(await kept_ws.recv())["type"] == "enqueued"
    finally:
        for socket in (ws, kept_ws):
            await socket.close()
