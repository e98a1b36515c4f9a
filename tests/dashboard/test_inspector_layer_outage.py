"""The inspector socket through a channel layer (Redis) outage.

The layer only carries logouts to the socket (`dashboard.logout_listener`):
while it fails, an inspector opens, stays open and keeps getting frames, a
logout still ends it by the login recheck, and once the layer is back the
socket joins its session's group again, so a logout ends it at once.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import InMemoryChannelLayer, channel_layers
from channels.testing import WebsocketCommunicator
from redis.exceptions import ConnectionError as RedisConnectionError

from api.wire import layer_receive
from dashboard.consumers import CLOSE_UNAUTHORISED
from dashboard.live import Broadcaster
from dashboard.session_sockets import session_sockets
from tests.dashboard.installed import installed
from tests.dashboard.test_consumers import QueueSource
from tests.dashboard.test_inspector_logout import inspector, logged_in

pytestmark = pytest.mark.django_db(transaction=True)

CLOSED = {"type": "websocket.close", "code": CLOSE_UNAUTHORISED}


class OutageLayer(InMemoryChannelLayer):
    """The in-memory layer behind a switch, failing as channels_redis does with Redis gone.

    While down every call raises redis's `ConnectionError`, and so does a
    receive that was waiting when it went down; `restart_empty` brings it
    back having forgotten every group and message, as a restarted Redis.
    """

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self._waiting: set[asyncio.Future[None]] = set()

    def fail(self) -> None:
        self.down = True
        for outage in self._waiting:
            if not outage.done():
                outage.set_result(None)

    def restart_empty(self) -> None:
        self.channels: dict[str, Any] = {}
        self.groups: dict[str, dict[str, float]] = {}
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise RedisConnectionError(
                "Error 111 connecting to 127.0.0.1:6379. Connection refused."
            )

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        self._check()
        await super().send(channel, message)

    async def group_add(self, group: str, channel: str) -> None:
        self._check()
        await super().group_add(group, channel)

    async def group_discard(self, group: str, channel: str) -> None:
        self._check()
        await super().group_discard(group, channel)

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        self._check()
        await super().group_send(group, message)

    async def receive(self, channel: str) -> dict[str, Any]:
        self._check()
        outage = asyncio.get_running_loop().create_future()
        self._waiting.add(outage)
        getting = asyncio.ensure_future(super().receive(channel))
        try:
            await asyncio.wait({getting, outage}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._waiting.discard(outage)
            if not getting.done():
                getting.cancel()
        if getting.done() and not getting.cancelled():
            message: dict[str, Any] = getting.result()
            return message
        self._check()
        raise AssertionError("unreachable: the receive ended without a message or an outage")


@pytest.fixture
def source() -> QueueSource:
    return QueueSource()


@pytest.fixture(autouse=True)
def broadcaster(source: QueueSource, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    settings.GROUP_REJOIN_SECONDS = 0.05
    monkeypatch.setattr(layer_receive, "RETRY_SECONDS", 0.05)
    with installed(Broadcaster(source, autostart=False)) as instance:
        yield instance


@pytest.fixture
def layer() -> Iterator[OutageLayer]:
    instance = OutageLayer()
    channel_layers.backends["default"] = instance
    try:
        yield instance
    finally:
        channel_layers.backends.pop("default", None)


def dead_redis_url() -> str:
    """A Redis URL on a port nobody listens on (connections are refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"


async def subscribed(socket_: WebsocketCommunicator) -> None:
    await socket_.send_json_to({"type": "subscribe"})
    snapshot = await socket_.receive_json_from()
    assert snapshot["type"] == "snapshot"
    await socket_.send_json_to({"type": "ack", "seq": snapshot["seq"]})


async def gets_an_update(
    socket_: WebsocketCommunicator, source: QueueSource, broadcaster: Broadcaster, rid: str
) -> None:
    source.enqueue(rid, "acme")
    broadcaster.tick()
    update = await socket_.receive_json_from(timeout=2)
    assert update["type"] == "update"
    await socket_.send_json_to({"type": "ack", "seq": update["seq"]})


async def test_an_inspector_opens_and_is_served_with_redis_down_and_a_logout_still_ends_it(
    settings: Any, source: QueueSource, broadcaster: Broadcaster
) -> None:
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [dead_redis_url()]},
        }
    }
    settings.INSPECTOR_LOGIN_RECHECK_SECONDS = 0.2
    alice = await database_sync_to_async(logged_in)("alice")
    key = alice.session.session_key

    tab = await inspector(alice)  # was refused (HTTP 403): the group_add raised
    await subscribed(tab)
    for rid in ("r1", "r2", "r3"):
        # Meanwhile the logout listener's receives fail and are retried.
        await asyncio.sleep(0.15)
        await gets_an_update(tab, source, broadcaster, rid)

    # The logout cannot reach the group; the recheck finds the session gone.
    response = await database_sync_to_async(alice.post)("/logout/")
    assert response.status_code == 302
    assert await tab.receive_output(timeout=5) == CLOSED
    assert not broadcaster.viewers
    assert session_sockets.held(key) == 0


async def test_an_open_inspector_outlives_a_redis_outage_and_hears_its_logout_once_redis_is_back(
    settings: Any, layer: OutageLayer, source: QueueSource, broadcaster: Broadcaster
) -> None:
    # Only the group can end it within the test: the recheck is a minute off.
    settings.INSPECTOR_LOGIN_RECHECK_SECONDS = 60
    alice = await database_sync_to_async(logged_in)("alice")
    tab = await inspector(alice)
    await subscribed(tab)

    layer.fail()  # Redis killed: the receive waiting on it raises (the socket closed with 1011)
    await gets_an_update(tab, source, broadcaster, "r1")
    assert await tab.receive_nothing(timeout=0.3)
    await gets_an_update(tab, source, broadcaster, "r2")

    layer.restart_empty()  # back, having forgotten the socket's membership
    await asyncio.sleep(0.3)  # several rejoin intervals
    await gets_an_update(tab, source, broadcaster, "r3")
    await database_sync_to_async(alice.post)("/logout/")
    assert await tab.receive_output(timeout=2) == CLOSED
    assert not broadcaster.viewers


async def test_an_inspector_opened_during_an_outage_joins_its_sessions_group_once_redis_is_back(
    settings: Any, layer: OutageLayer, source: QueueSource, broadcaster: Broadcaster
) -> None:
    settings.INSPECTOR_LOGIN_RECHECK_SECONDS = 60
    alice = await database_sync_to_async(logged_in)("alice")
    bob = await database_sync_to_async(logged_in)("bob")
    layer.fail()
    tab = await inspector(alice)
    other = await inspector(bob)
    await subscribed(tab)
    await gets_an_update(tab, source, broadcaster, "r1")

    layer.restart_empty()
    await asyncio.sleep(0.3)
    await database_sync_to_async(alice.post)("/logout/")
    assert await tab.receive_output(timeout=2) == CLOSED
    # Another login's socket is not in that group.
    await subscribed(other)
    assert await other.receive_nothing(timeout=0.2)
    await other.disconnect()
    assert not broadcaster.viewers


class HangingLayer(InMemoryChannelLayer):
    """A paused Redis: a group send that takes far longer than anyone waits."""

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        await asyncio.sleep(5)


def test_a_logout_with_redis_paused_waits_the_bound_not_the_redis_clients_timeout(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from dashboard import consumers

    monkeypatch.setattr(consumers, "LOGOUT_SEND_SECONDS", 0.1)
    channel_layers.backends["default"] = HangingLayer()
    try:
        client = logged_in("paused-redis")
        started = time.monotonic()
        response = client.post("/logout/")
        took = time.monotonic() - started
    finally:
        channel_layers.backends.pop("default", None)
    assert response.status_code == 302
    assert "logout could not reach the inspector sockets: timed out" in caplog.text
    assert took < 4  # the layer's send alone takes 5 s
