"""Logging out closes the inspector sockets of that session, and only those."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.test import Client

from dashboard import consumers
from dashboard.consumers import CLOSE_UNAUTHORISED
from dashboard.live import Broadcaster
from dashboard.routing import websocket_urlpatterns
from tests.dashboard.installed import installed
from tests.dashboard.test_consumers import QueueSource

pytestmark = pytest.mark.django_db(transaction=True)

application = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
SITE = "127.0.0.1:8000"


@pytest.fixture(autouse=True)
def broadcaster() -> Iterator[Broadcaster]:
    with installed(Broadcaster(QueueSource(), autostart=False)) as instance:
        yield instance


def logged_in(username: str) -> Client:
    user = User.objects.create_superuser(username, password="pw-logout-123")
    client = Client()
    client.force_login(user)
    return client


def inspector_socket(client: Client) -> WebsocketCommunicator:
    """An inspector socket of `client`'s session, not connected yet."""
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    headers = [(b"host", SITE.encode()), (b"origin", f"http://{SITE}".encode())]
    return WebsocketCommunicator(
        application, "/ws/inspector/", headers=[*headers, (b"cookie", cookie.encode())]
    )


async def inspector(client: Client) -> WebsocketCommunicator:
    socket = inspector_socket(client)
    connected, _ = await socket.connect()
    assert connected
    return socket


async def test_logging_out_closes_that_sessions_inspector_in_every_tab(
    broadcaster: Broadcaster,
) -> None:
    alice = await database_sync_to_async(logged_in)("alice")
    bob = await database_sync_to_async(logged_in)("bob")
    tabs = [await inspector(alice), await inspector(alice)]
    other = await inspector(bob)
    assert len(broadcaster.viewers) == 3

    response = await database_sync_to_async(alice.post)("/logout/")
    assert response.status_code == 302

    for tab in tabs:
        assert await tab.receive_output() == {"type": "websocket.close", "code": CLOSE_UNAUTHORISED}
    assert len(broadcaster.viewers) == 1
    await other.send_json_to({"type": "subscribe"})
    assert (await other.receive_json_from())["type"] == "snapshot"
    await other.disconnect()


def test_the_sockets_hear_of_a_logout_only_once_its_session_is_gone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Heard before, a socket's page went to the login page while the session
    # still held, and was sent on, back to the inspector.
    client = logged_in("carol")
    key = client.cookies["sessionid"].value
    heard: list[bool] = []

    async def announce(group: str) -> None:
        heard.append(await database_sync_to_async(Session.objects.filter(pk=key).exists)())

    monkeypatch.setattr(consumers, "_announce_logout", announce)
    client.post("/logout/")
    assert heard == [False]


async def test_a_logout_during_an_inspector_s_handshake_refuses_it(
    monkeypatch: pytest.MonkeyPatch, broadcaster: Broadcaster
) -> None:
    # Tab B logs out while tab A's inspector connects, after its session was
    # read: the logout went to a group the socket had not joined yet, and it
    # streamed the queue until its login recheck.
    alice = await database_sync_to_async(logged_in)("alice")
    checked = consumers.role_of

    def role_then_logout(user: Any) -> Any:
        role = checked(user)
        alice.post("/logout/")  # the same sync thread, between the two reads
        return role

    monkeypatch.setattr(consumers, "role_of", role_then_logout)
    assert await inspector_socket(alice).connect() == (False, CLOSE_UNAUTHORISED)
    assert not broadcaster.viewers
