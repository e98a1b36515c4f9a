"""The inspector socket under a client that floods it or never reads.

A killed consumer (Daphne cancels one still busy `application_close_timeout`
after its client left) must still unregister its viewer; forced frames
(subscribe, resync, drill) from a viewer behind on acks coalesce into one.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User

from api.wire.consumers.guard import OPEN_SOCKETS
from dashboard.live import ACK_WINDOW, Broadcaster
from tests.dashboard.installed import installed
from tests.dashboard.test_consumers import QueueSource, WallClock, connect

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def source() -> QueueSource:
    return QueueSource()


@pytest.fixture
def broadcaster(source: QueueSource) -> Any:
    with installed(Broadcaster(source, autostart=False, wall_clock=WallClock())) as instance:
        yield instance


async def subscribed(user: User) -> WebsocketCommunicator:
    communicator, connected = await connect(user)
    assert connected
    await communicator.send_json_to({"type": "subscribe"})
    assert (await communicator.receive_json_from())["type"] == "snapshot"
    return communicator


def session_group_members() -> set[tuple[str, str]]:
    """(group, channel) of each member; sockets earlier tests left open may be among them."""
    layer = get_channel_layer()
    return {(name, channel) for name, members in layer.groups.items() for channel in members}


async def test_a_consumer_cancelled_mid_backlog_unregisters_its_viewer_once(
    viewer: User, broadcaster: Broadcaster
) -> None:
    before = session_group_members()
    open_before = set(OPEN_SOCKETS)
    communicator = await subscribed(viewer)
    assert len(broadcaster.viewers) == 1 and session_group_members() - before
    assert OPEN_SOCKETS - open_before  # this socket, counted open
    # A backlog the consumer has not worked through, then Daphne's kill.
    for _ in range(50):
        await communicator.send_json_to({"type": "resync"})
    communicator.future.cancel()
    with pytest.raises(asyncio.CancelledError):
        await communicator.future
    assert not broadcaster.viewers
    assert not session_group_members() - before
    # Left open, close_all at shutdown waited its whole timeout for it.
    assert not OPEN_SOCKETS - open_before


async def test_a_normal_close_after_which_the_task_is_cancelled_unregisters_once(
    viewer: User, broadcaster: Broadcaster, monkeypatch: pytest.MonkeyPatch
) -> None:
    communicator = await subscribed(viewer)
    unregistered: list[object] = []
    real = broadcaster.unregister
    monkeypatch.setattr(broadcaster, "unregister", lambda v: (unregistered.append(v), real(v)))
    await communicator.disconnect()
    assert len(unregistered) == 1 and not broadcaster.viewers


async def frames(communicator: WebsocketCommunicator, count: int) -> list[dict[str, Any]]:
    """The next `count` frames, however long the consumer takes to build them."""
    return [await communicator.receive_json_from(timeout=5) for _ in range(count)]


async def handled(communicator: WebsocketCommunicator) -> list[dict[str, Any]]:
    """Wait until the consumer has handled every message sent so far; the frames before.

    A consumer handles its messages in order, so the error answering a
    message of no known type, sent last, says all before it were handled:
    no fixed wait, however long the backlog takes on a loaded machine.
    A frame is sent by a task of its own, so one built just before may
    follow the error: count what was built on the viewer (`seq`).
    """
    await communicator.send_json_to({"type": "handled?"})
    before = []
    while (frame := await communicator.receive_json_from(timeout=5))["type"] != "error":
        before.append(frame)
    assert frame["message"] == "unknown message type 'handled?'"
    return before


async def test_many_forced_requests_from_a_viewer_behind_on_acks_become_one_frame_on_its_ack(
    viewer: User, source: QueueSource, broadcaster: Broadcaster
) -> None:
    source.enqueue("r1", "acme")
    communicator = await subscribed(viewer)
    (state,) = broadcaster.viewers
    for _ in range(ACK_WINDOW - 1):
        await communicator.send_json_to({"type": "resync"})
    assert [f["seq"] for f in await frames(communicator, ACK_WINDOW - 1)] == list(
        range(2, ACK_WINDOW + 1)
    )
    # Behind by ACK_WINDOW frames: nothing more is built, however much is asked.
    for i in range(200):
        await communicator.send_json_to({"type": ("resync", "subscribe", "drill")[i % 3]})
    assert await handled(communicator) == []
    assert state.seq == ACK_WINDOW and state.owed
    await communicator.send_json_to({"type": "ack", "seq": ACK_WINDOW})
    (owed,) = await frames(communicator, 1)
    assert owed["type"] == "snapshot" and owed["seq"] == ACK_WINDOW + 1
    assert "drill" in owed  # the last drill asked for is answered in it
    # One frame for all of them (the ack is handled at once: it built no other).
    assert state.seq == ACK_WINDOW + 1 and not state.owed
    await communicator.disconnect()


async def test_a_drill_from_a_viewer_that_keeps_up_is_answered_at_once(
    viewer: User, source: QueueSource, broadcaster: Broadcaster
) -> None:
    source.enqueue("r1", "acme")
    communicator = await subscribed(viewer)
    for seq in range(2, 6):
        await communicator.send_json_to({"type": "drill", "search": f"q{seq}"})
        frame = await communicator.receive_json_from()
        assert frame["seq"] == seq and "drill" in frame
        await communicator.send_json_to({"type": "ack", "seq": seq})
    await communicator.disconnect()
