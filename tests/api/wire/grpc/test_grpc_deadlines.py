"""A client's `grpc-timeout`, on both doors: the call ends at its deadline.

Cortex v1.15.3 sets no deadline on its loops, but any gRPC client may. At
the deadline the call ends with DEADLINE_EXCEEDED and RST_STREAM (what
grpcio answers), and what the stream owns ends exactly as when the client
disconnects: a frontend's queued requests are cancelled, a querier's
in-flight request goes back to its queue once, then fails to its frontend.
The raw peer sets the header without keeping the deadline itself, so what
is seen is the server's doing.
"""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator

import grpc
import pytest

from api.wire.grpc.clients import CortexFrontend, get_request
from api.wire.grpc.http2_frames import CANCEL, NO_ERROR, RST_STREAM, S_INITIAL_WINDOW_SIZE, frame
from api.wire.grpc.lean_server import LeanGrpcServer, grpc_timeout
from api.wire.grpc.server import _unless_expired
from api.wire.grpc.streams import AbortError
from scheduler_core.model import QueueConfig
from scheduler_core.pb import httpgrpc_pb2
from scheduler_core.pb import schedulerpb_pb2 as pb
from tests.api.wire.grpc.conftest import Scheduler, running_scheduler
from tests.api.wire.grpc.raw_http2 import RawPeer, grpc_message, request_headers, until

FRONTEND_LOOP = "/schedulerpb.SchedulerForFrontend/FrontendLoop"
QUERIER_LOOP = "/schedulerpb.SchedulerForQuerier/QuerierLoop"
NOTIFY = "/schedulerpb.SchedulerForQuerier/NotifyQuerierShutdown"
DEADLINE_EXCEEDED = str(grpc.StatusCode.DEADLINE_EXCEEDED.value[0])
INTERNAL = str(grpc.StatusCode.INTERNAL.value[0])
# Long enough for the messages before it on a busy machine, short for the suite.
SHORT = "400m"


async def scheduler_on(implementation: str) -> AsyncIterator[Scheduler]:
    sched = await running_scheduler(QueueConfig(), implementation=implementation)
    yield sched
    await sched.door.stop(0)
    await sched.runtime.stop(drain_timeout=0)


@pytest.fixture(params=["lean", "grpcio"])
async def scheduler(request: pytest.FixtureRequest) -> AsyncIterator[Scheduler]:
    """A scheduler on each door."""
    async for sched in scheduler_on(request.param):
        yield sched


@pytest.fixture
async def lean() -> AsyncIterator[Scheduler]:
    """A scheduler on the lean door, for what is its own."""
    async for sched in scheduler_on("lean"):
        yield sched


def server_of(scheduler: Scheduler) -> LeanGrpcServer:
    assert isinstance(scheduler.door.server, LeanGrpcServer)
    return scheduler.door.server


def init(address: str) -> bytes:
    message = pb.FrontendToScheduler(type=pb.INIT, frontendAddress=address)
    return grpc_message(message.SerializeToString())


def enqueue(query_id: int) -> bytes:
    request = httpgrpc_pb2.HTTPRequest(method="GET", url="/api/v1/query?query=up")
    message = pb.FrontendToScheduler(
        type=pb.ENQUEUE, queryID=query_id, userID="t", httpRequest=request
    )
    return grpc_message(message.SerializeToString())


def worker_hello(querier_id: str) -> bytes:
    return grpc_message(pb.QuerierToScheduler(querierID=querier_id).SerializeToString())


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("8H", 28_800.0),
        ("1M", 60.0),
        ("2S", 2.0),
        ("100m", 0.1),
        ("5u", 5e-6),
        ("7n", 7e-9),
        ("00000001S", 1.0),
        ("99999999H", 99_999_999 * 3600.0),
        ("0m", 0.0),
    ],
)
def test_a_grpc_timeout_is_up_to_8_digits_and_a_unit(value: str, seconds: float) -> None:
    assert grpc_timeout(value) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "value", ["", "S", "1", "1x", "1s", "123456789S", "-1S", "+1S", " 1S", "1.5S", "１S", "1_0S"]
)
def test_a_grpc_timeout_of_any_other_shape_is_malformed(value: str) -> None:
    assert grpc_timeout(value) is None


@pytest.mark.parametrize("ending", ["deadline", "disconnect"])
async def test_a_frontend_loop_past_its_deadline_cancels_its_queries_as_a_disconnect_does(
    scheduler: Scheduler, ending: str
) -> None:
    peer = await RawPeer.connect(scheduler.door.port)
    try:
        timeout = [("grpc-timeout", SHORT)] if ending == "deadline" else []
        peer.open(1, request_headers(FRONTEND_LOOP, *timeout))
        peer.data(1, init("fe:1") + enqueue(1) + enqueue(2))
        replies = await peer.until_messages(1, 3)
        statuses = [pb.SchedulerToFrontend.FromString(m).status for m in replies.messages()]
        assert statuses == [pb.OK, pb.OK, pb.OK]
        if ending == "deadline":
            reply = await peer.until_ended(1)
            assert reply.status["grpc-status"] == DEADLINE_EXCEEDED
            assert reply.status["grpc-message"] == "Deadline Exceeded"
        else:
            peer.send(frame(RST_STREAM, 0, 1, CANCEL.to_bytes(4, "big")))

        cancelled = await scheduler.recorder.wait_for("cancelled", 2)

        assert sorted(r.id for r in cancelled) == ["grpc:fe:1:1", "grpc:fe:1:2"]
        await until(lambda: not scheduler.door.frontend_connections())
    finally:
        peer.close()


async def test_the_status_at_the_deadline_comes_with_a_reset_of_the_clients_side(
    scheduler: Scheduler,
) -> None:
    peer = await RawPeer.connect(scheduler.door.port)
    try:
        peer.open(1, request_headers(FRONTEND_LOOP, ("grpc-timeout", "100m")))
        peer.data(1, init("fe:1"))

        reply = await peer.until_ended(1)
        while reply.reset is None:
            await peer.read_frame()

        assert reply.status["grpc-status"] == DEADLINE_EXCEEDED
        assert reply.reset == NO_ERROR
    finally:
        peer.close()


async def test_a_querier_worker_past_its_deadline_has_its_request_retried_once_then_failed(
    scheduler: Scheduler,
) -> None:
    frontend = await CortexFrontend(scheduler.address).start()
    try:
        loop = await frontend.open_loop()
        await loop.enqueue(7, "tenant-x", get_request("/api/v1/query", [("query", "up")]))
        for attempt in (1, 2):
            worker = await RawPeer.connect(scheduler.door.port)
            try:
                worker.open(1, request_headers(QUERIER_LOOP, ("grpc-timeout", SHORT)))
                worker.data(1, worker_hello(f"q{attempt}"))
                (message,) = (await worker.until_messages(1, 1)).messages()
                assert pb.SchedulerToQuerier.FromString(message).queryID == 7

                reply = await worker.until_ended(1)

                assert reply.status["grpc-status"] == DEADLINE_EXCEEDED
            finally:
                worker.close()

        result = await frontend.result(7)
        assert (result.code, result.org_id) == (500, "tenant-x")
        assert b"disconnected while running the request (after 1 retry)" in result.body
        assert [r.id for r in scheduler.recorder.of("failed")] == [f"grpc:{frontend.address}:7"]
        assert len(scheduler.recorder.of("dispatched")) == 2
    finally:
        await frontend.close()


async def test_a_deadline_already_over_is_answered_before_the_servicer_runs(
    scheduler: Scheduler,
) -> None:
    peer = await RawPeer.connect(scheduler.door.port)
    try:
        peer.open(1, request_headers(FRONTEND_LOOP, ("grpc-timeout", "0n")))
        peer.data(1, init("fe:1"))

        reply = await peer.until_ended(1)

        assert reply.messages() == []
        assert reply.status["grpc-status"] == DEADLINE_EXCEEDED
        assert not scheduler.door.frontend_connections()
    finally:
        peer.close()


@pytest.mark.parametrize("value", ["xx", "1x", "S"])
async def test_a_malformed_grpc_timeout_is_refused_with_internal_and_a_reset(
    scheduler: Scheduler, value: str
) -> None:
    peer = await RawPeer.connect(scheduler.door.port)
    try:
        peer.open(1, request_headers(FRONTEND_LOOP, ("grpc-timeout", value)))
        peer.data(1, init("fe:1"))

        reply = await peer.until_ended(1)
        while reply.reset is None:
            await peer.read_frame()

        assert reply.status["grpc-status"] == INTERNAL
        assert reply.reset == NO_ERROR
        assert not scheduler.door.frontend_connections()
    finally:
        peer.close()


@pytest.mark.parametrize("value", ["123456789S", " 1S", "1.5S"])
async def test_the_lean_door_refuses_a_malformed_grpc_timeout_as_grpc_go_does(
    lean: Scheduler, value: str
) -> None:
    # grpcio reads these leniently (9 digits, leading blanks); grpc-go does not.
    peer = await RawPeer.connect(lean.door.port)
    try:
        peer.open(1, request_headers(NOTIFY, ("grpc-timeout", value)), end=True)

        reply = await peer.until_ended(1)

        assert reply.status[":status"] == "400"
        assert reply.status["grpc-status"] == INTERNAL
        assert reply.status["grpc-message"] == (
            f"malformed grpc-timeout {value!r}: "
            "expected 1 to 8 digits and a unit (H, M, S, m, u or n)"
        )
        assert reply.reset is None  # the client had ended its side
    finally:
        peer.close()


async def test_a_call_served_before_its_deadline_ends_normally_and_stops_its_timer(
    lean: Scheduler,
) -> None:
    peer = await RawPeer.connect(lean.door.port)
    try:
        peer.open(1, request_headers(FRONTEND_LOOP, ("grpc-timeout", "99999999H")))
        peer.data(1, init("fe:1") + enqueue(1))
        await peer.until_messages(1, 2)
        (conn,) = server_of(lean).connections
        call = conn.streams[1].app
        assert call.deadline is not None and not call.deadline.cancelled()

        peer.data(1, b"", end=True)
        reply = await peer.until_ended(1)

        assert reply.status["grpc-status"] == "0"
        await until(lambda: call.deadline.cancelled())
    finally:
        peer.close()


async def test_replies_held_by_a_shut_window_at_the_deadline_are_dropped_with_a_reset(
    lean: Scheduler,
) -> None:
    # 12-byte stream windows: the INIT reply and one OK fit, the next waits.
    peer = await RawPeer.connect(lean.door.port, struct.pack(">HI", S_INITIAL_WINDOW_SIZE, 12))
    peer.grant = False
    try:
        peer.open(1, request_headers(FRONTEND_LOOP, ("grpc-timeout", SHORT)))
        peer.data(1, init("fe:1") + enqueue(1) + enqueue(2))
        await peer.until_messages(1, 2)

        reply = await peer.until_ended(1)

        assert reply.reset == CANCEL
        assert len(reply.messages()) == 2
        assert all("grpc-status" not in block for block in reply.blocks)  # none overtook it
        cancelled = await lean.recorder.wait_for("cancelled", 2)
        assert sorted(r.id for r in cancelled) == ["grpc:fe:1:1", "grpc:fe:1:2"]
    finally:
        peer.close()


async def test_the_deadline_ends_only_its_own_stream(scheduler: Scheduler) -> None:
    peer = await RawPeer.connect(scheduler.door.port)
    try:
        peer.open(1, request_headers(FRONTEND_LOOP, ("grpc-timeout", "100m")))
        peer.data(1, init("fe:1"))
        peer.open(3, request_headers(FRONTEND_LOOP))
        peer.data(3, init("fe:2"))
        assert (await peer.until_ended(1)).status["grpc-status"] == DEADLINE_EXCEEDED

        peer.data(3, enqueue(1))
        replies = await peer.until_messages(3, 2)

        assert [pb.SchedulerToFrontend.FromString(m).status for m in replies.messages()] == [
            pb.OK,
            pb.OK,
        ]
        assert [c.address for c in scheduler.door.frontend_connections()] == ["fe:2"]
        assert peer.reply(3).reset is None
    finally:
        peer.close()


class _ContextPastItsDeadline:
    """What grpcio's servicer context reports when grpc core hands the
    servicer a call before its deadline timer fires."""

    def time_remaining(self) -> float:
        return 0.0

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise AbortError(code, details)


async def test_the_grpcio_door_runs_no_servicer_for_a_call_past_its_deadline() -> None:
    ran = []

    async def servicer(request: object, context: object) -> None:
        ran.append(request)

    with pytest.raises(AbortError) as refused:
        await _unless_expired(servicer)(b"", _ContextPastItsDeadline())

    assert refused.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert ran == []
