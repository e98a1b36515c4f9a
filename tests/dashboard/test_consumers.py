"""The inspector websocket through the real auth middleware, ticks driven by hand."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

from dashboard import live
from dashboard.live import ACK_WINDOW, Broadcaster
from dashboard.routing import websocket_urlpatterns
from dashboard.wire import tree_from_wire
from scheduler_core.model import INGESTER, STORE_GATEWAY, QueueConfig, Request
from scheduler_core.queue import RequestQueue
from scheduler_core.snapshot import QueueSnapshot
from tests.dashboard.installed import installed

pytestmark = pytest.mark.django_db(transaction=True)

application = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))


class QueueSource:
    """A real queue on a fake clock, read the way the runtime host is read."""

    def __init__(self) -> None:
        self.now = 100.0
        self.snapshots = 0
        self.queue = RequestQueue(QueueConfig(), clock=lambda: self.now)

    def snapshot(self) -> QueueSnapshot:
        self.snapshots += 1
        return self.queue.snapshot()

    def stats(self) -> Mapping[str, Any] | None:
        return {"frontends": 1}

    def enqueue(self, rid: str, tenant: str, component: str = INGESTER) -> None:
        self.queue.enqueue(Request(id=rid, tenant_id=tenant, component=component))


class WallClock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def source() -> QueueSource:
    return QueueSource()


@pytest.fixture
def wall() -> WallClock:
    return WallClock()


@pytest.fixture
def broadcaster(source: QueueSource, wall: WallClock) -> Any:
    with installed(Broadcaster(source, autostart=False, wall_clock=wall)) as instance:
        yield instance


def session_cookie(user: User | None) -> list[tuple[bytes, bytes]]:
    headers = [(b"origin", b"http://127.0.0.1")]
    if user is None:
        return headers
    client = Client()
    client.force_login(user)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    return headers + [(b"cookie", f"{settings.SESSION_COOKIE_NAME}={cookie}".encode())]


async def connect(user: User | None) -> tuple[WebsocketCommunicator, bool]:
    headers = await database_sync_to_async(session_cookie)(user)
    communicator = WebsocketCommunicator(application, "/ws/inspector/", headers=headers)
    connected, _ = await communicator.connect()
    return communicator, connected


@pytest.fixture
async def viewer_socket(
    viewer: User, broadcaster: Broadcaster
) -> AsyncIterator[WebsocketCommunicator]:
    communicator, connected = await connect(viewer)
    assert connected
    yield communicator
    await communicator.disconnect()


async def test_connection_without_login_is_refused(broadcaster: Broadcaster) -> None:
    communicator, connected = await connect(None)
    assert not connected
    assert not broadcaster.viewers


async def test_connection_of_a_user_without_a_role_is_refused(broadcaster: Broadcaster) -> None:
    nobody = await database_sync_to_async(User.objects.create_user)("nobody", password="pw-x-123")
    communicator, connected = await connect(nobody)
    assert not connected


async def test_subscribe_sends_a_snapshot_then_updates_with_what_changed(
    viewer_socket: WebsocketCommunicator, source: QueueSource, broadcaster: Broadcaster
) -> None:
    source.enqueue("r1", "acme")
    await viewer_socket.send_json_to({"type": "subscribe"})
    first = await viewer_socket.receive_json_from()
    assert first["type"] == "snapshot" and first["seq"] == 1 and first["epoch"] == live.EPOCH
    assert {"header", "tree", "queriers"} <= first.keys()
    assert [n["name"] for n in tree_from_wire(first["tree"])["nodes"]] == ["acme"]
    await viewer_socket.send_json_to({"type": "ack", "seq": 1})
    source.enqueue("r2", "zeta", STORE_GATEWAY)
    broadcaster.tick()
    update = await viewer_socket.receive_json_from()
    assert update["type"] == "update" and update["seq"] == 2
    assert "queriers" not in update
    assert [(n["name"], n["length"]) for n in tree_from_wire(update["tree"])["nodes"]] == [
        ("acme", 1),
        ("zeta", 1),
    ]
    assert update["header"]["total"] == 2


async def test_a_tick_with_nothing_changed_sends_nothing(
    viewer_socket: WebsocketCommunicator, broadcaster: Broadcaster
) -> None:
    await viewer_socket.send_json_to({"type": "subscribe"})
    await viewer_socket.receive_json_from()
    await viewer_socket.send_json_to({"type": "ack", "seq": 1})
    broadcaster.tick()
    assert await viewer_socket.receive_nothing(timeout=0.05)


async def test_filters_and_projection_are_applied_on_the_server(
    viewer_socket: WebsocketCommunicator, source: QueueSource
) -> None:
    for i, tenant in enumerate(["team-a", "team-b", "other"]):
        source.enqueue(f"r{i}", tenant)
    await viewer_socket.send_json_to(
        {
            "type": "subscribe",
            "projection": "component-first",
            "search": "team",
            "expanded": ["c:ingester"],
        }
    )
    frame = await viewer_socket.receive_json_from()
    ingester = tree_from_wire(frame["tree"])["nodes"][0]
    assert frame["params"]["search"] == "team"
    assert [c["name"] for c in ingester["children"]] == ["team-a", "team-b"]


async def test_a_viewer_that_does_not_ack_drops_frames_instead_of_queueing(
    viewer_socket: WebsocketCommunicator, source: QueueSource, broadcaster: Broadcaster
) -> None:
    await viewer_socket.send_json_to({"type": "subscribe"})
    await viewer_socket.receive_json_from()
    (viewer,) = broadcaster.viewers
    for i in range(5):
        source.enqueue(f"r{i}", "acme")
        broadcaster.tick()
    received = []
    while not await viewer_socket.receive_nothing(timeout=0.05):
        received.append(await viewer_socket.receive_json_from())
    assert [f["seq"] for f in received] == list(range(2, ACK_WINDOW + 1))
    assert viewer.dropped == 5 - (ACK_WINDOW - 1)
    await viewer_socket.send_json_to({"type": "ack", "seq": ACK_WINDOW})
    await viewer_socket.receive_nothing(timeout=0.05)
    broadcaster.tick()
    caught_up = await viewer_socket.receive_json_from()
    assert caught_up["seq"] == ACK_WINDOW + 1
    assert tree_from_wire(caught_up["tree"])["nodes"][0]["length"] == 5


async def test_resync_after_a_gap_sends_a_full_snapshot(
    viewer_socket: WebsocketCommunicator, source: QueueSource
) -> None:
    source.enqueue("r1", "acme")
    await viewer_socket.send_json_to({"type": "subscribe"})
    await viewer_socket.receive_json_from()
    await viewer_socket.send_json_to({"type": "resync"})
    again = await viewer_socket.receive_json_from()
    assert again["type"] == "snapshot" and again["seq"] == 2
    assert {"header", "tree", "queriers"} <= again.keys()


async def test_pause_stops_frames_and_resume_sends_a_snapshot(
    viewer_socket: WebsocketCommunicator, source: QueueSource, broadcaster: Broadcaster
) -> None:
    await viewer_socket.send_json_to({"type": "subscribe"})
    await viewer_socket.receive_json_from()
    await viewer_socket.send_json_to({"type": "ack", "seq": 1})
    await viewer_socket.send_json_to({"type": "pause"})
    await viewer_socket.receive_nothing(timeout=0.05)
    source.enqueue("r1", "acme")
    broadcaster.tick()
    assert await viewer_socket.receive_nothing(timeout=0.05)
    await viewer_socket.send_json_to({"type": "resume"})
    frame = await viewer_socket.receive_json_from()
    assert (
        frame["type"] == "snapshot" and tree_from_wire(frame["tree"])["nodes"][0]["name"] == "acme"
    )


async def test_chart_points_accumulate_once_per_second_and_arrive_once(
    viewer_socket: WebsocketCommunicator,
    source: QueueSource,
    broadcaster: Broadcaster,
    wall: WallClock,
) -> None:
    await viewer_socket.send_json_to({"type": "subscribe"})
    first = await viewer_socket.receive_json_from()
    assert len(first["chart"]) == 1
    await viewer_socket.send_json_to({"type": "ack", "seq": 1})
    wall.now += 1.0
    source.enqueue("r1", "acme")
    broadcaster.tick()
    update = await viewer_socket.receive_json_from()
    assert [p[1] for p in update["chart"]] == [1]


def test_with_no_inspector_open_the_chart_still_gains_a_point_a_second(
    source: QueueSource, broadcaster: Broadcaster, wall: WallClock
) -> None:
    for queued in range(1, 4):
        source.enqueue(f"r{queued}", "acme")
        assert broadcaster.sample_history() > 0
        assert broadcaster.sample_history() == 0  # a point this second already
        wall.now += 1.0
    assert [point[1] for point in broadcaster.chart.since(0)] == [1, 2, 3]
    source.now += 5.0
    source.enqueue("r4", "acme")
    broadcaster.sample_history()
    # The oldest wait is read from the leaves, as a tick reads it from its index.
    assert broadcaster.chart.since(0)[-1][1:3] == [4, 5.0]


def test_each_chart_point_carries_the_config_version_the_scheduler_ran(
    source: QueueSource, broadcaster: Broadcaster, wall: WallClock
) -> None:
    broadcaster.sample_history()  # a source that does not say: no version
    versions = iter([7, 7, 8])
    source.config_version = lambda: next(versions)  # type: ignore[attr-defined]
    for _ in range(3):
        wall.now += 1.0
        broadcaster.sample_history()
    assert [point[5] for point in broadcaster.chart.since(0)] == [None, 7, 7, 8]


async def test_an_inspector_opened_later_gets_the_minutes_before_it_then_only_new_points(
    viewer_socket: WebsocketCommunicator,
    source: QueueSource,
    broadcaster: Broadcaster,
    wall: WallClock,
) -> None:
    for queued in range(1, 4):
        source.enqueue(f"r{queued}", "acme")
        broadcaster.sample_history()
        wall.now += 1.0
    await viewer_socket.send_json_to({"type": "subscribe"})
    first = await viewer_socket.receive_json_from()
    assert [p[1] for p in first["chart"]] == [1, 2, 3, 3]
    await viewer_socket.send_json_to({"type": "ack", "seq": 1})
    await viewer_socket.send_json_to({"type": "pause"})
    await viewer_socket.receive_nothing(timeout=0.05)
    wall.now += 1.0
    source.enqueue("r4", "acme")
    assert broadcaster.tick() is None  # paused: no tick, but the history goes on
    broadcaster.sample_history()
    await viewer_socket.send_json_to({"type": "resume"})
    resumed = await viewer_socket.receive_json_from()
    assert [p[1] for p in resumed["chart"]][-1] == 4


async def test_bad_messages_get_an_error_and_keep_the_connection(
    viewer_socket: WebsocketCommunicator,
) -> None:
    await viewer_socket.send_to(text_data="not json")
    assert (await viewer_socket.receive_json_from())["type"] == "error"
    await viewer_socket.send_to(text_data='{"type": "subscribe", "type": "pause"}')
    assert "duplicate key 'type'" in (await viewer_socket.receive_json_from())["message"]
    await viewer_socket.send_json_to({"type": "subscribe", "projection": "sideways"})
    assert "projection" in (await viewer_socket.receive_json_from())["message"]
    # An unknown type is quoted, not echoed whole: a 900 KB one got 900 KB back.
    await viewer_socket.send_json_to({"type": "x" * 900_000})
    refused = (await viewer_socket.receive_json_from())["message"]
    assert len(refused) < 1_000 and refused.endswith("... (900000 characters)")
    await viewer_socket.send_json_to({"type": "subscribe"})
    assert (await viewer_socket.receive_json_from())["type"] == "snapshot"


async def test_when_every_viewer_is_behind_the_queue_is_not_even_read(
    viewer_socket: WebsocketCommunicator, source: QueueSource, broadcaster: Broadcaster
) -> None:
    await viewer_socket.send_json_to({"type": "subscribe"})
    await viewer_socket.receive_json_from()
    source.enqueue("r1", "acme")
    broadcaster.tick()
    await viewer_socket.receive_json_from()
    taken = source.snapshots
    for _ in range(10):
        assert broadcaster.tick() is None
    assert source.snapshots == taken
