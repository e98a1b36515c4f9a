"""The inspector's drill-down, stuck marks and longest-running list, ticks driven by hand."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User

from api.wire.queue_rows import QUERY_LINE_LIMIT
from dashboard.drill import DrillBudget, DrillParams, DrillState, InvalidDrill, build_page
from dashboard.live import Broadcaster
from scheduler_core.model import (
    PriorityDef,
    QueryPriority,
    QueueConfig,
    Request,
    TenantLimits,
)
from scheduler_core.runtime import SchedulerRuntime
from scheduler_core.snapshot import QueueSnapshot
from tests.dashboard.installed import installed
from tests.dashboard.test_consumers import WallClock, connect
from tests.fakes import FakeClock
from tests.polling import until

pytestmark = pytest.mark.django_db(transaction=True)


class RuntimeSource:
    """A real runtime on a fake clock, read the way the runtime host is read."""

    def __init__(self) -> None:
        self.clock = FakeClock(100.0)
        self.runtime = SchedulerRuntime(QueueConfig(stuck_threshold_seconds=30.0), clock=self.clock)

    def snapshot(self) -> QueueSnapshot:
        return self.runtime.snapshot()

    def stats(self) -> Mapping[str, Any] | None:
        return None

    def stuck_threshold(self) -> float:
        return self.runtime.config.stuck_threshold_seconds

    def drill_page(self, params: DrillParams, budget: DrillBudget | None = None) -> Any:
        return build_page(self.runtime, params, {}, "replica-1", budget)

    def enqueue(self, rid: str, tenant: str, query: str = "up", **fields: Any) -> None:
        self.runtime.enqueue(Request(id=rid, tenant_id=tenant, query=query, **fields))


@pytest.fixture
def source() -> RuntimeSource:
    return RuntimeSource()


@pytest.fixture
def broadcaster(source: RuntimeSource) -> Any:
    with installed(Broadcaster(source, autostart=False, wall_clock=WallClock())) as instance:
        yield instance


@pytest.fixture
async def socket(viewer: User, broadcaster: Broadcaster) -> AsyncIterator[WebsocketCommunicator]:
    communicator, connected = await connect(viewer)
    assert connected
    await communicator.send_json_to({"type": "subscribe"})
    await communicator.receive_json_from()
    await communicator.send_json_to({"type": "ack", "seq": 1})
    yield communicator
    await communicator.disconnect()


async def acked(socket: WebsocketCommunicator, broadcaster: Broadcaster, seq: int) -> None:
    """Acknowledge `seq` and wait until the consumer has handled it."""
    await socket.send_json_to({"type": "ack", "seq": seq})
    await until(lambda: all(viewer.acked >= seq for viewer in broadcaster.viewers))


def rows(frame: dict[str, Any], known: dict[str, list[Any]]) -> list[list[Any]]:
    """Resolve `["=", id]` references against the rows the browser already has."""
    out = []
    for row in frame["drill"]["rows"]:
        full = known[row[1]] if row[0] == "=" and len(row) == 2 else row
        known[f"{full[22]}/{full[0]}"] = full  # rows are keyed by replica and id
        out.append(full)
    return out


async def test_a_drill_lists_the_tenant_s_requests_in_dequeue_order_then_references_them(
    socket: WebsocketCommunicator, source: RuntimeSource, broadcaster: Broadcaster
) -> None:
    source.enqueue("r1", "acme", "sum(rate(x[5m]))\nby (job)")
    source.enqueue("r2", "acme", "<b>up</b>", priority=2)
    source.enqueue("r3", "beta")
    await socket.send_json_to({"type": "drill", "tenant": "acme"})
    frame = await socket.receive_json_from()
    known: dict[str, list[Any]] = {}
    got = rows(frame, known)
    assert [r[0] for r in got] == ["r2", "r1"]  # priority 2 first
    assert frame["drill"]["total"] == 2 and frame["drill"]["exact"] is True
    first_line, more = got[1][7], got[1][8]
    assert (first_line, more) == ("sum(rate(x[5m]))", True)
    assert got[0][7] == "<b>up</b>"  # sent as data; the page escapes it
    assert got[0][22] == "replica-1" and got[0][13] == "q"
    await socket.send_json_to({"type": "ack", "seq": frame["seq"]})
    source.clock.now = 140.0
    source.enqueue("r4", "acme")
    broadcaster.tick()
    update = await socket.receive_json_from()
    unchanged = [["=", "replica-1/r2"], ["=", "replica-1/r1"]]
    assert update["drill"]["rows"][:2] == unchanged  # unchanged: references
    assert [r[0] for r in rows(update, known)] == ["r2", "r1", "r4"]


async def test_the_same_drill_closed_and_reopened_is_sent_again(
    socket: WebsocketCommunicator, source: RuntimeSource
) -> None:
    source.enqueue("r1", "acme")
    await socket.send_json_to({"type": "drill", "tenant": "acme"})
    first = await socket.receive_json_from()
    await socket.send_json_to({"type": "ack", "seq": first["seq"]})
    await socket.send_json_to({"type": "drill_close"})
    # The browser dropped its rows on close: the reopened drill's whole rows,
    # the same text as the first section, must reach it again.
    await socket.send_json_to({"type": "drill", "tenant": "acme"})
    again = await socket.receive_json_from()
    assert again["drill"]["rows"] == first["drill"]["rows"]


async def test_a_searching_drill_counts_only_matches_and_a_bad_regex_is_an_error(
    socket: WebsocketCommunicator, source: RuntimeSource, broadcaster: Broadcaster
) -> None:
    for i, query in enumerate(["rate(a[1m])", "up", "RATE(b[5m])"]):
        source.enqueue(f"r{i}", "acme", query)
    await socket.send_json_to({"type": "drill", "tenant": "acme", "search": "rate("})
    frame = await socket.receive_json_from()
    assert [r[0] for r in frame["drill"]["rows"]] == ["r0", "r2"]
    assert frame["drill"]["total"] == 2
    await socket.send_json_to({"type": "ack", "seq": frame["seq"]})
    await socket.send_json_to({"type": "drill", "tenant": "acme", "regex": "a("})
    error = await socket.receive_json_from()
    assert error["type"] == "error" and "regex" in error["message"]
    # The field is named apart, for the page to mark it, and the old drill is
    # dropped: its rows would be shown as if they matched the refused filter.
    assert error["drill"]["field"] == "regex" and error["drill"]["message"]
    source.enqueue("r9", "acme", "rate(c[1m])")
    broadcaster.tick()
    assert "drill" not in await socket.receive_json_from()


async def test_stuck_leaves_and_the_oldest_request_are_in_the_header(
    socket: WebsocketCommunicator, source: RuntimeSource, broadcaster: Broadcaster
) -> None:
    source.enqueue("old", "acme", component="store-gateway")
    source.clock.now = 125.0
    source.enqueue("new", "beta")
    source.clock.now = 140.0  # acme's waited 40 s, over the 30 s threshold
    broadcaster.tick()
    header = (await socket.receive_json_from())["header"]
    assert header["stuck"] == {
        "threshold": 30.0,
        "leaves": 1,
        "tenants": 1,
        "oldest": {"tenant": "acme", "component": "store-gateway", "wait": 40.0},
    }


async def test_the_longest_running_list_names_each_busy_worker_s_request(
    socket: WebsocketCommunicator, source: RuntimeSource, broadcaster: Broadcaster
) -> None:
    source.enqueue("r1", "acme")
    source.enqueue("r2", "beta")
    worker = source.runtime.connect_querier("q-1")
    source.runtime.queue.dequeue("q-1", worker)
    source.clock.now = 105.0
    other = source.runtime.connect_querier("q-1")
    source.runtime.queue.dequeue("q-1", other)
    broadcaster.tick()
    frame = await socket.receive_json_from()
    longest = frame["longest"]
    assert [(r[0], r[4], r[5]) for r in longest] == [("r1", "q-1", worker), ("r2", "q-1", other)]
    workers = frame["queriers"]["queriers"][0]["workers"]
    assert {w[6] for w in workers} == {"r1", "r2"}  # the request id a click opens


def test_drill_parameters_are_checked_field_by_field() -> None:
    with pytest.raises(InvalidDrill, match="limit"):
        DrillParams.from_message({"limit": 501})
    with pytest.raises(InvalidDrill, match="component") as refused:
        DrillParams.from_message({"component": "disk"})
    assert refused.value.field == "component"
    with pytest.raises(InvalidDrill, match="min_wait") as refused:
        DrillParams.from_message({"min_wait": -5})
    assert (refused.value.field, refused.value.message) == (
        "min_wait",
        "must be a finite number of seconds, 0 or more",
    )
    assert DrillParams.from_message({"tenant": "acme", "limit": 10}).limit == 10


def test_a_row_s_queued_since_tells_apart_requests_a_millisecond_apart() -> None:
    source = RuntimeSource()
    source.enqueue("first", "acme")
    source.clock.now += 0.001
    source.enqueue("second", "acme")
    page = build_page(source.runtime, DrillParams.from_message({"tenant": "acme"}), {}, "r")
    first, second = (json.loads(text)[14] for _, text in page["rows"])
    # The page marks the oldest queued request by this instant.
    assert first < second


async def test_a_tenant_drill_says_which_queriers_may_serve_it_and_which_are_reserved(
    socket: WebsocketCommunicator, source: RuntimeSource, broadcaster: Broadcaster
) -> None:
    for i in range(5):
        source.runtime.connect_querier(f"q-{i}")
    priority = QueryPriority(
        enabled=True, priorities=(PriorityDef(priority=3, reserved_queriers=0.5),)
    )
    source.runtime.set_tenant_limits("acme", TenantLimits(max_queriers=3, query_priority=priority))
    source.enqueue("r1", "acme")
    await socket.send_json_to({"type": "drill", "tenant": "acme"})
    frame = await socket.receive_json_from()
    serving = frame["drill"]["serving"]
    shard = source.runtime.queue.serving("acme").shard
    assert shard is not None and serving["shard"] == list(shard) and serving["queriers"] == 5
    # Half of a shard of 3, rounded up: its first two queriers, sorted.
    assert serving["reserved"] == [[3, list(shard[:2])]]
    assert serving["reserved_workers"] == {"idle": 2, "connected": 2}  # one worker each, idle
    # Unchanged, it is not sent again; changed, it is.
    await acked(socket, broadcaster, frame["seq"])
    source.enqueue("r2", "acme")
    broadcaster.tick()
    frame = await socket.receive_json_from()
    assert "serving" not in frame["drill"] and len(frame["drill"]["rows"]) == 2
    await acked(socket, broadcaster, frame["seq"])
    source.runtime.set_tenant_limits("acme", TenantLimits(max_queriers=3))
    broadcaster.tick()
    frame = await socket.receive_json_from()
    assert frame["drill"]["serving"] == {"shard": list(shard), "queriers": 5, "reserved": []}


def test_a_drill_of_a_component_alone_says_nothing_of_serving() -> None:
    source = RuntimeSource()
    source.enqueue("r1", "acme")
    page = build_page(source.runtime, DrillParams.from_message({"component": "ingester"}), {}, "r")
    assert "serving" not in page
    page = build_page(source.runtime, DrillParams.from_message({"tenant": "acme"}), {}, "r")
    assert page["serving"] == {"shard": None, "queriers": 0, "reserved": []}


@pytest.mark.parametrize(
    ("query", "line", "more"),
    [
        ("\n  sum(rate(x[5m]))\n  by (job)\n", "sum(rate(x[5m]))", True),
        ("\r\n\tup\r\n", "up", False),
        ("up  \n\n", "up", False),
        ("x" * (QUERY_LINE_LIMIT + 40), "x" * QUERY_LINE_LIMIT, True),
        (" \n \n", "", False),
    ],
)
def test_a_row_shows_the_query_s_first_line_with_text_on_it(
    query: str, line: str, more: bool
) -> None:
    source = RuntimeSource()
    # Its own id: encoded rows are kept by id and enqueue instant, the same each case.
    source.enqueue(repr(query), "acme", query)
    page = build_page(source.runtime, DrillParams.from_message({"tenant": "acme"}), {}, "r")
    (_, text), *_ = page["rows"]
    row = json.loads(text)
    assert (row[7], row[8]) == (line, more)


def test_a_tenant_drill_counts_the_tenant_s_running_requests_at_its_rows_instant() -> None:
    source = RuntimeSource()
    source.enqueue("r1", "acme", "up")
    source.enqueue("r2", "acme", "rate(x[5m])")
    source.enqueue("r3", "beta")
    for _ in range(3):  # all three run: r1, r2 (acme) and r3 (beta)
        worker = source.runtime.connect_querier("q-1")
        assert source.runtime.queue.dequeue("q-1", worker)[0] is not None
    source.enqueue("r4", "acme", "queued still")
    # Whatever narrows the rows (the state, a search), the count is the tenant's:
    # the panel's querier-time line speaks of the tenant.
    for narrowed in ({}, {"state": "queued"}, {"search": "rate"}, {"state": "in_flight"}):
        params = DrillParams.from_message({"tenant": "acme", **narrowed})
        page = build_page(source.runtime, params, {}, "r")
        assert page["tenant_running"] == 2, narrowed
    listed = build_page(source.runtime, DrillParams.from_message({"tenant": "acme"}), {}, "r")
    assert [row[13] for row in map(json.loads, (text for _, text in listed["rows"]))] == [
        "q",
        "f",
        "f",
    ]  # the rows the count stands beside: two running
    whole_queue = build_page(source.runtime, DrillParams.from_message({}), {}, "r")
    assert "tenant_running" not in whole_queue  # no one tenant's line to say it


def test_a_drill_section_sends_a_tenant_s_running_count_of_none_too() -> None:
    source = RuntimeSource()
    source.enqueue("r1", "acme")
    params = DrillParams.from_message({"tenant": "acme"})
    state = DrillState(params)
    section = json.loads(state.section(build_page(source.runtime, params, {}, "r"), full=True))
    # 0, not left out: without it the panel would keep the header's older count.
    assert section["tenant_running"] == 0
    worker = source.runtime.connect_querier("q-1")
    source.runtime.queue.dequeue("q-1", worker)
    section = json.loads(state.section(build_page(source.runtime, params, {}, "r"), full=False))
    assert section["tenant_running"] == 1
