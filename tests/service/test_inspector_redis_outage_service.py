"""A real Daphne's inspector sockets through a Redis killed and restarted empty.

The Redis here is the test's own (tests/servers.py's throwaway Redis is
shared by the session, and this test kills it): started from the same
`redis-server` binary, SIGKILLed, then started again on its port. The
replica's database is its own SQLite (`DaphneProcess`). Before the inspector
stopped hanging its socket on the channel layer, the open socket closed
with 1011 when Redis died, and every new one was refused (HTTP 403).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
import websockets

from dashboard.consumers import CLOSE_UNAUTHORISED
from loadgen.daphne_process import DaphneProcess
from tests.servers import ServerError, _free_port, _start_redis
from tests.service.test_scale_out import Browser


class KillableRedis:
    """A Redis of this test's own, on one port across restarts."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.running = [self._start()]

    def _start(self) -> Any:
        try:
            return _start_redis(self.port)
        except ServerError as exc:
            pytest.fail(f"this test needs redis-server: {exc}", pytrace=False)

    def kill(self) -> None:
        process = self.running[-1].process
        process.kill()
        process.wait(10)

    def restart_empty(self) -> None:
        self.running.append(self._start())

    def stop(self) -> None:
        for running in self.running:
            running.stop()


@pytest.fixture
def redis() -> Iterator[KillableRedis]:
    server = KillableRedis()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def replica(redis: KillableRedis) -> Iterator[DaphneProcess]:
    settings = {
        "REDIS_URL": redis.url,
        "CHANNEL_PREFIX": f"qi-test-{uuid.uuid4().hex[:8]}",
        "GROUP_REJOIN_SECONDS": "0.5",
        # Far off: within the test only the session's group can end a socket.
        "INSPECTOR_LOGIN_RECHECK_SECONDS": "300",
    }
    with DaphneProcess(extra_env=settings, grpc=False) as server:
        yield server


async def snapshot(ws: Any, ask: str) -> dict[str, Any]:
    """Ask for a full view (`subscribe` or `resync`); its snapshot, acking every frame."""
    await ws.send(json.dumps({"type": ask}))
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), 10))
        if "seq" in frame:
            await ws.send(json.dumps({"type": "ack", "seq": frame["seq"]}))
        if frame["type"] == "snapshot":
            return frame


async def close_code(ws: Any, within: float) -> int | None:
    """The code of the server's close within `within` seconds, else None (frames acked)."""
    deadline = time.monotonic() + within
    try:
        while True:
            raw = await asyncio.wait_for(ws.recv(), max(0.01, deadline - time.monotonic()))
            seq = json.loads(raw).get("seq")
            if seq is not None:
                await ws.send(json.dumps({"type": "ack", "seq": seq}))
    except websockets.ConnectionClosed as exc:
        return exc.rcvd.code if exc.rcvd is not None else None
    except TimeoutError:
        return None


def log_out(browser: Browser) -> None:
    page = browser.get("/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert csrf is not None, "the page has no CSRF token"
    body = urlencode({"csrfmiddlewaretoken": csrf[1]}).encode()
    request = urllib.request.Request(f"{browser.base}/logout/", body)
    with browser.opener.open(request, timeout=10) as response:
        assert "/login/" in response.url


async def test_an_inspector_outlives_a_killed_redis_and_hears_its_logout_once_redis_is_back(
    redis: KillableRedis, replica: DaphneProcess
) -> None:
    await asyncio.to_thread(replica.create_user, "fiona", "pw-fiona-outage-1", "viewer")
    browser = await asyncio.to_thread(Browser, replica, "fiona", "pw-fiona-outage-1")
    before = await browser.inspector()
    assert (await snapshot(before, "subscribe"))["type"] == "snapshot"

    redis.kill()
    # Long enough for the socket's listener to fail (it closed with 1011 at once).
    assert await close_code(before, within=2.0) is None
    assert (await snapshot(before, "resync"))["type"] == "snapshot"
    during = await browser.inspector()  # refused with HTTP 403 while Redis was down
    assert (await snapshot(during, "subscribe"))["type"] == "snapshot"

    redis.restart_empty()  # every group membership forgotten
    await asyncio.sleep(2.5)  # rejoins every 0.5 s; receives retried every second
    await asyncio.to_thread(log_out, browser)
    for ws in (before, during):
        assert await close_code(ws, within=5.0) == CLOSE_UNAUTHORISED
