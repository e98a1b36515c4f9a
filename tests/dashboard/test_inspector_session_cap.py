"""One login session holds at most INSPECTOR_SOCKETS_PER_SESSION inspectors on a replica."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth.models import User
from django.test import Client, override_settings

from dashboard.consumers import CLOSE_TOO_MANY, CLOSE_UNAUTHORISED
from dashboard.live import Broadcaster
from dashboard.session_sockets import SessionSockets, session_sockets
from tests.dashboard.installed import installed
from tests.dashboard.test_consumers import QueueSource
from tests.dashboard.test_inspector_logout import inspector, logged_in

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def broadcaster() -> Iterator[Broadcaster]:
    with installed(Broadcaster(QueueSource(), autostart=False)) as instance:
        yield instance


@override_settings(INSPECTOR_SOCKETS_PER_SESSION=2)
async def test_a_session_past_its_cap_is_told_why_and_closed_and_others_are_not_counted(
    broadcaster: Broadcaster,
) -> None:
    alice = await database_sync_to_async(logged_in)("alice")
    bob = await database_sync_to_async(logged_in)("bob")
    tabs = [await inspector(alice), await inspector(alice)]

    # Past the cap the socket is accepted, to be told why, then closed.
    third = await inspector(alice)
    error = await third.receive_json_from()
    assert error["type"] == "error" and error["limit"] == 2
    assert "INSPECTOR_SOCKETS_PER_SESSION" in error["message"]
    assert await third.receive_output() == {"type": "websocket.close", "code": CLOSE_TOO_MANY}
    # The refused socket built no viewer; another login has its own places.
    assert len(broadcaster.viewers) == 2
    other = await inspector(bob)
    await other.send_json_to({"type": "subscribe"})
    assert (await other.receive_json_from())["type"] == "snapshot"

    # A closed tab gives its place back: the next one connects and is served.
    await tabs[0].disconnect()
    again = await inspector(alice)
    await again.send_json_to({"type": "subscribe"})
    assert (await again.receive_json_from())["type"] == "snapshot"
    for socket in (tabs[1], again, other):
        await socket.disconnect()
    assert len(broadcaster.viewers) == 0


@override_settings(INSPECTOR_SOCKETS_PER_SESSION=1)
async def test_a_logout_gives_back_the_places_of_the_sockets_it_closes(
    broadcaster: Broadcaster,
) -> None:
    alice = await database_sync_to_async(logged_in)("alice")
    key = alice.session.session_key
    tab = await inspector(alice)
    assert session_sockets.held(key) == 1

    await database_sync_to_async(alice.post)("/logout/")
    assert await tab.receive_output() == {"type": "websocket.close", "code": CLOSE_UNAUTHORISED}
    assert session_sockets.held(key) == 0


def test_places_are_counted_per_session_and_a_session_with_none_is_forgotten() -> None:
    places = SessionSockets()
    assert places.take("a", 2) and places.take("a", 2)
    assert not places.take("a", 2)
    assert places.take("b", 2)
    places.give_back("a")
    assert places.held("a") == 1
    assert places.take("a", 2)
    for _ in range(2):
        places.give_back("a")
    places.give_back("b")
    assert places._open == {}


def login_again(username: str) -> Client:
    """A second login of the same user: a new session."""
    client = Client()
    client.force_login(User.objects.get(username=username))
    return client


@override_settings(INSPECTOR_SOCKETS_PER_SESSION=2, INSPECTOR_SOCKETS_PER_USER=3)
async def test_logging_in_again_does_not_renew_a_users_places(broadcaster: Broadcaster) -> None:
    first = await database_sync_to_async(logged_in)("alice")
    again = await database_sync_to_async(login_again)("alice")
    assert first.session.session_key != again.session.session_key
    tabs = [await inspector(first), await inspector(first), await inspector(again)]

    refused = await inspector(again)
    error = await refused.receive_json_from()
    assert error["limit"] == 3 and "INSPECTOR_SOCKETS_PER_USER = 3" in error["message"]
    assert await refused.receive_output() == {"type": "websocket.close", "code": CLOSE_TOO_MANY}
    # The refused socket gave back the session place it had taken first.
    assert session_sockets.held(again.session.session_key) == 1
    await tabs[0].disconnect()
    connected = await inspector(again)
    await connected.send_json_to({"type": "subscribe"})
    assert (await connected.receive_json_from())["type"] == "snapshot"
    for socket in (tabs[1], tabs[2], connected):
        await socket.disconnect()
    assert len(broadcaster.viewers) == 0
