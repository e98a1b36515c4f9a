"""The frontends panel: which frontends a tick sends, in what order, and when."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from api.cluster.replica_frontends import ReplicaFrontends
from api.wire.frontends import FrontendRow
from dashboard import live
from dashboard.frontend_view import (
    MAX_FRONTENDS_SHOWN,
    build_frontends,
    build_merged_frontends,
    local_frontends,
)
from dashboard.live import Broadcaster, Viewer
from dashboard.projections import ViewParams
from dashboard.templatetags.dashboard_tags import (
    frontend_label,
    frontends_count,
    frontends_missing,
)
from dashboard.wire import frontends_from_wire, frontends_to_wire
from scheduler_core.model import QueueConfig
from scheduler_core.queue import RequestQueue
from scheduler_core.snapshot import QueueSnapshot


def websocket(address: str, outstanding: int, since: float = 1.0) -> FrontendRow:
    return FrontendRow("websocket", address, "fe-token", 1, outstanding, since)


def grpc(address: str, outstanding: int, streams: int = 2) -> FrontendRow:
    return FrontendRow("grpc", address, "", streams, outstanding, None)


def test_frontends_with_most_outstanding_come_first_then_by_address() -> None:
    rows = [websocket("10.0.0.2:1", 3), grpc("10.0.0.9:1", 7), websocket("10.0.0.1:1", 3)]
    panel = build_frontends(rows)
    assert [f["address"] for f in panel["frontends"]] == ["10.0.0.9:1", "10.0.0.1:1", "10.0.0.2:1"]
    assert (panel["total"], panel["hidden"], panel["outstanding"]) == (3, 0, 13)
    assert panel["local_only"] is False


def test_a_crowded_replica_shows_the_first_rows_of_the_full_order_and_counts_all() -> None:
    rng = random.Random(6)
    rows = [websocket(f"10.0.{i // 250}.{i % 250}:80", rng.randrange(5)) for i in range(400)]
    panel = build_frontends(rows)
    expected = sorted(rows, key=lambda r: (-r.outstanding, r.address))[:MAX_FRONTENDS_SHOWN]
    assert [f["address"] for f in panel["frontends"]] == [r.address for r in expected]
    assert panel["total"] == 400
    assert panel["hidden"] == 400 - MAX_FRONTENDS_SHOWN
    assert panel["outstanding"] == sum(r.outstanding for r in rows)


def test_each_row_carries_transport_token_streams_outstanding_and_age() -> None:
    panel = build_frontends([websocket("127.0.0.1:5000", 2, since=12.345), grpc("10.1.1.1:9", 0)])
    assert panel["frontends"] == [
        {
            "transport": "websocket",
            "address": "127.0.0.1:5000",
            "name": "fe-token",
            "streams": 1,
            "outstanding": 2,
            "for": 12.3,
        },
        {
            "transport": "grpc",
            "address": "10.1.1.1:9",
            "name": "",
            "streams": 2,
            "outstanding": 0,
            "for": None,
        },
    ]


def test_row_labels_and_counts_are_spelled_as_the_script_spells_them() -> None:
    panel = build_frontends([grpc("10.1.1.1:9", 4)], local_only=True)
    assert frontend_label(panel["frontends"][0]) == "gRPC frontend 10.1.1.1:9: 4 outstanding"
    assert frontends_count(panel) == "1 on this replica · 4 outstanding"
    assert frontends_count(build_frontends([])) == "0 total · 0 outstanding"


class FrontendSource:
    """A fixed empty queue and a frontend list the test edits between ticks."""

    def __init__(self) -> None:
        self.queue = RequestQueue(QueueConfig(), clock=lambda: 100.0)
        self.rows: list[FrontendRow] = []

    def snapshot(self) -> QueueSnapshot:
        return self.queue.snapshot()

    def stats(self) -> dict[str, Any] | None:
        return None

    def frontends(self) -> list[FrontendRow]:
        return list(self.rows)


async def _unused_send(text: str) -> None:
    raise AssertionError("frames are built, not sent, in this test")


def frame(viewer: Viewer, broadcaster: Broadcaster) -> dict[str, Any] | None:
    tick = broadcaster.latest()
    assert tick is not None
    text = viewer.frame(tick, broadcaster.chart)
    if text is None:
        return None
    message = json.loads(text)
    if "frontends" in message:
        message["frontends"] = frontends_from_wire(message["frontends"])
    return message


def test_frames_carry_the_frontends_section_only_when_it_changed() -> None:
    source = FrontendSource()
    broadcaster = Broadcaster(source, autostart=False, wall_clock=lambda: 1_700_000_000.0)
    viewer = Viewer(_unused_send)
    viewer.subscribe(ViewParams())
    first = frame(viewer, broadcaster)
    assert first is not None and first["type"] == "snapshot"
    assert first["frontends"]["frontends"] == [] and first["frontends"]["total"] == 0

    source.rows = [websocket("127.0.0.1:5000", 2)]
    update = frame(viewer, broadcaster)
    assert update is not None and set(update) & {"header", "tree", "queriers"} == set()
    assert [f["outstanding"] for f in update["frontends"]["frontends"]] == [2]

    assert frame(viewer, broadcaster) is None

    source.rows = []
    gone = frame(viewer, broadcaster)
    assert gone is not None and gone["frontends"]["frontends"] == []


def test_a_source_without_frontends_sends_the_empty_panel() -> None:
    class QueueOnly:
        def snapshot(self) -> QueueSnapshot:
            return FrontendSource().snapshot()

        def stats(self) -> dict[str, Any] | None:
            return None

    tick = Broadcaster(QueueOnly(), autostart=False).latest()
    assert tick is not None
    assert json.loads(tick.frontends) == {
        "total": 0,
        "hidden": 0,
        "outstanding": 0,
        "local_only": False,
        "frontends": [],
    }


@pytest.fixture
def installed() -> Iterator[FrontendSource]:
    source = FrontendSource()
    live.install_broadcaster(Broadcaster(source, autostart=False))
    yield source
    live.install_broadcaster(None)


@pytest.mark.django_db
def test_the_page_renders_the_frontends_panel_before_any_live_update(
    viewer_client: Client, installed: FrontendSource
) -> None:
    installed.rows = [grpc("10.1.1.1:9", 4), websocket("127.0.0.1:5000", 1, since=75.0)]
    html = viewer_client.get("/").content.decode()
    assert 'aria-label="gRPC frontend 10.1.1.1:9: 4 outstanding"' in html
    assert '<td class="token" dir="auto">fe-token</td>' in html
    assert '<td class="num">1m15s</td>' in html
    assert html.index("10.1.1.1:9") < html.index("127.0.0.1:5000")
    assert "2 total · 5 outstanding" in html
    assert re.search(r'<p id="frontends-empty" class="muted empty" hidden>', html)


@pytest.mark.django_db
def test_the_page_says_no_frontends_are_connected(
    viewer_client: Client, installed: FrontendSource
) -> None:
    html = viewer_client.get("/").content.decode()
    assert re.search(r'<p id="frontends-empty" class="muted empty" >No frontends connected', html)
    assert re.search(r'<table class="compact" id="frontends-table" hidden>', html)


def test_wire_form_round_trips_every_frontend_row() -> None:
    rows = [websocket("127.0.0.1:5000", 2, since=3.25), grpc("10.1.1.1:9", 4, streams=5)]
    panel = build_frontends(rows, local_only=True)
    wire = json.loads(json.dumps(frontends_to_wire(panel)))
    assert wire["frontends"][0] == ["g", "10.1.1.1:9", "", 5, 4, None]
    assert frontends_from_wire(wire) == panel


def peer(replica: str, rows: list[FrontendRow], *, total: int | None = None) -> ReplicaFrontends:
    """A peer's block as published: `total` counts rows it did not send too."""
    count = len(rows) if total is None else total
    return ReplicaFrontends(replica, count, sum(r.outstanding for r in rows), tuple(rows))


def test_merged_rows_name_their_replica_and_rank_ties_by_replica() -> None:
    shared = grpc("10.9.9.9:9", 2)  # one Cortex frontend, connected to every replica
    panel = build_merged_frontends(
        local_frontends("b", [shared, websocket("10.0.0.1:1", 0)]),
        [peer("a", [shared]), peer("c", [websocket("10.0.0.5:1", 7)])],
    )
    rows = [(f["address"], f["replica"]) for f in panel["frontends"]]
    assert rows == [
        ("10.0.0.5:1", "c"),
        ("10.9.9.9:9", "a"),
        ("10.9.9.9:9", "b"),
        ("10.0.0.1:1", "b"),
    ]
    assert (panel["total"], panel["hidden"], panel["outstanding"]) == (4, 0, 11)
    assert panel["local_only"] is False
    assert (panel["replicas"], panel["missing"]) == (["a", "b", "c"], [])


def test_merged_totals_count_the_rows_peers_did_not_send() -> None:
    crowd = [websocket(f"10.1.0.{i}:1", 1) for i in range(MAX_FRONTENDS_SHOWN)]
    panel = build_merged_frontends(
        local_frontends("a", [websocket("10.0.0.1:1", 0)]), [peer("b", crowd, total=400)]
    )
    assert len(panel["frontends"]) == MAX_FRONTENDS_SHOWN
    assert {f["replica"] for f in panel["frontends"]} == {"b"}
    assert (panel["total"], panel["hidden"]) == (401, 401 - MAX_FRONTENDS_SHOWN)


def test_a_peer_without_frontends_keeps_the_panel_local_only_and_is_named() -> None:
    alone = build_merged_frontends(local_frontends("a", [grpc("10.1.1.1:9", 4)]), [], ["b"])
    assert alone["local_only"] is True and alone["missing"] == ["b"]
    assert frontends_count(alone) == "1 on this replica · 4 outstanding"
    assert frontends_missing(alone) == (
        "Not listed: the frontends of replica b, which does not publish them."
    )
    partial = build_merged_frontends(
        local_frontends("a", [grpc("10.1.1.1:9", 4)]),
        [peer("b", [websocket("10.0.0.1:1", 1)])],
        ["c", "d"],
    )
    assert partial["replicas"] == ["a", "b", "c", "d"]
    assert frontends_count(partial) == "2 on 2 of 4 replicas · 5 outstanding"
    assert frontends_missing(partial) == (
        "Not listed: the frontends of replicas c, d, which do not publish them."
    )


def test_when_every_replica_publishes_the_count_is_a_plain_total() -> None:
    panel = build_merged_frontends(local_frontends("a", []), [peer("b", [grpc("x:1", 3)])])
    assert frontends_count(panel) == "1 total · 3 outstanding"
    assert frontends_missing(panel) == ""
    assert frontend_label(panel["frontends"][0]) == "gRPC frontend x:1 on replica b: 3 outstanding"


def test_the_single_replica_panel_has_no_replica_fields() -> None:
    panel = build_frontends([websocket("127.0.0.1:5000", 1)])
    assert set(panel) == {"total", "hidden", "outstanding", "local_only", "frontends"}
    assert "replica" not in panel["frontends"][0]
    assert frontends_missing(panel) == ""


def test_merged_wire_rows_append_the_replica_and_round_trip() -> None:
    panel = build_merged_frontends(
        local_frontends("a", [websocket("127.0.0.1:5000", 2, since=3.25)]),
        [peer("b", [grpc("10.1.1.1:9", 4, streams=5)])],
    )
    wire = json.loads(json.dumps(frontends_to_wire(panel)))
    assert wire["frontends"][0] == ["g", "10.1.1.1:9", "", 5, 4, None, "b"]
    assert wire["frontends"][1][-1] == "a"
    assert (wire["replicas"], wire["missing"]) == (["a", "b"], [])
    assert frontends_from_wire(wire) == panel


@pytest.mark.django_db
def test_the_page_shows_no_replica_column_for_one_replica(
    viewer_client: Client, installed: FrontendSource
) -> None:
    installed.rows = [grpc("10.1.1.1:9", 4)]
    html = viewer_client.get("/").content.decode()
    assert '<th scope="col" id="frontends-replica" hidden>Replica</th>' in html
    assert 'class="replica"' not in html
    assert 'data-frontend="grpc 10.1.1.1:9"' in html
    assert re.search(r'<p id="frontends-missing" class="muted" hidden></p>', html)
