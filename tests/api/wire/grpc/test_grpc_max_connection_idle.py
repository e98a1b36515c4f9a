"""The door's idle limit (GRPC_MAX_CONNECTION_IDLE_SECONDS, `http2_idle.py`).

As grpc-go's `-server.grpc.keepalive.max-connection-idle`: a connection with
no open stream for the limit gets GOAWAY NO_ERROR and is closed; one with a
stream open is never touched. The raw peer keeps no timer of its own, so
what is seen is the server's doing. The limit is short here (`LIMIT`); the
timer's bookkeeping (a stream that comes and goes restarts the count, one
timer at a time, none after the connection is lost) is checked on a fake
clock at the end.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import uvloop

from api.wire import runtime_host
from api.wire.grpc.http2 import Http2Connection
from api.wire.grpc.http2_frames import (
    END_HEADERS,
    END_STREAM,
    GOAWAY,
    HEADERS,
    NO_ERROR,
    PING,
    PREFACE,
    SETTINGS,
    Http2Stream,
    encode_headers,
    frame,
)
from api.wire.grpc.lean_server import LeanGrpcServer
from loadgen.daphne_process import free_port
from scheduler_core.model import QueueConfig
from scheduler_core.pb import schedulerpb_pb2 as pb
from scheduler_core.pb.schedulerpb_pb2_grpc import SchedulerForQuerierStub
from tests.api.wire.grpc.conftest import Scheduler, running_scheduler
from tests.api.wire.grpc.raw_http2 import RawPeer, grpc_message, request_headers, until

FRONTEND_LOOP = "/schedulerpb.SchedulerForFrontend/FrontendLoop"
NOTIFY = "/schedulerpb.SchedulerForQuerier/NotifyQuerierShutdown"
INIT = grpc_message(
    pb.FrontendToScheduler(type=pb.INIT, frontendAddress="fe:1").SerializeToString()
)
LIMIT = 0.2
# A timer may fire a little early on some loops (uvloop rounds to milliseconds).
EARLY = 0.01


@asynccontextmanager
async def scheduler_with(limit: float, implementation: str = "lean") -> AsyncIterator[Scheduler]:
    """A scheduler whose door sends away connections idle for `limit` seconds."""
    sched = await running_scheduler(
        QueueConfig(), implementation=implementation, max_connection_idle=limit
    )
    try:
        yield sched
    finally:
        for channel in sched.channels:
            await channel.close()
        await sched.door.stop(0)
        await sched.runtime.stop(drain_timeout=0)


@pytest.fixture
async def lean() -> AsyncIterator[Scheduler]:
    """The lean door with an idle limit of `LIMIT` seconds."""
    async with scheduler_with(LIMIT) as sched:
        yield sched


def server_of(sched: Scheduler) -> LeanGrpcServer:
    assert isinstance(sched.door.server, LeanGrpcServer)
    return sched.door.server


async def still_open(peer: RawPeer) -> bool:
    """Whether the door still answers a PING on this connection."""
    peer.send(frame(PING, 0, 0, b"idle-chk"))
    while True:
        try:
            kind, flags, _, payload = await asyncio.wait_for(peer.read_frame(), 5)
        except (asyncio.IncompleteReadError, ConnectionResetError):
            return False
        if kind == PING and flags & 0x1 and payload == b"idle-chk":
            return peer.goaway is None


async def sent_away_when_idle(sched: Scheduler) -> float:
    """Connect, send the preface and SETTINGS, open no stream: seconds until closed."""
    loop = asyncio.get_running_loop()
    peer = await RawPeer.connect(sched.door.port)
    start = loop.time()
    try:
        await peer.until_closed(timeout=5)
        elapsed = loop.time() - start
        assert peer.goaway == (NO_ERROR, b"max_idle")
    finally:
        peer.close()
    await until(lambda: not server_of(sched).connections)
    return elapsed


async def sent_away_after_its_last_stream(sched: Scheduler) -> None:
    """A stream open past the limit keeps the connection; after it ends, the
    connection is sent away once idle for the limit, counted from that end."""
    loop = asyncio.get_running_loop()
    peer = await RawPeer.connect(sched.door.port)
    try:
        peer.open(1, request_headers(FRONTEND_LOOP))
        peer.data(1, INIT)
        await peer.until_messages(1, 1)
        await asyncio.sleep(3 * LIMIT)
        assert await still_open(peer)
        assert len(server_of(sched).connections) == 1

        peer.data(1, b"", end=True)  # the frontend half-closes: its loop ends with OK
        reply = await peer.until_ended(1)
        ended = loop.time()
        assert reply.status["grpc-status"] == "0"
        await peer.until_closed(timeout=5)

        assert loop.time() - ended >= LIMIT - EARLY
        assert peer.goaway == (NO_ERROR, b"max_idle")
    finally:
        peer.close()
    await until(lambda: not server_of(sched).connections)


async def test_a_connection_that_never_opens_a_stream_gets_goaway_no_error_and_is_closed(
    lean: Scheduler,
) -> None:
    elapsed = await sent_away_when_idle(lean)

    assert LIMIT - EARLY <= elapsed < LIMIT + 2.0


async def test_a_connection_with_an_open_stream_is_not_closed_past_the_limit(
    lean: Scheduler,
) -> None:
    peer = await RawPeer.connect(lean.door.port)
    try:
        peer.open(1, request_headers(FRONTEND_LOOP))
        peer.data(1, INIT)
        await peer.until_messages(1, 1)

        await asyncio.sleep(4 * LIMIT)

        assert await still_open(peer)
        assert [conn.transport.is_closing() for conn in server_of(lean).connections] == [False]
        assert lean.door.frontend_connections()  # the frontend is still registered
    finally:
        peer.close()


async def test_after_its_last_stream_ends_the_connection_is_closed_once_idle_for_the_limit(
    lean: Scheduler,
) -> None:
    await sent_away_after_its_last_stream(lean)


async def test_a_limit_of_0_keeps_an_idle_connection_open() -> None:
    async with scheduler_with(0.0) as sched:
        peer = await RawPeer.connect(sched.door.port)
        try:
            peer.open(1, request_headers(NOTIFY))
            peer.data(1, grpc_message(b""), end=True)
            await peer.until_ended(1)
            await asyncio.sleep(4 * LIMIT)

            assert await still_open(peer)
            (conn,) = server_of(sched).connections
            assert conn._idle_timer is None  # nothing armed at all
        finally:
            peer.close()


async def test_a_grpc_client_sent_away_for_idleness_dials_again_and_is_served(
    lean: Scheduler,
) -> None:
    stub = SchedulerForQuerierStub(lean.channel())
    request = pb.NotifyQuerierShutdownRequest(querierID="q-idle")
    await stub.NotifyQuerierShutdown(request)
    await until(lambda: not server_of(lean).connections)  # sent away after LIMIT

    await stub.NotifyQuerierShutdown(request)

    assert len(server_of(lean).connections) == 1


async def test_the_grpcio_door_takes_the_limit_as_its_own_max_connection_idle() -> None:
    async with scheduler_with(LIMIT, implementation="grpcio") as sched:
        peer = await RawPeer.connect(sched.door.port)
        try:
            await peer.until_closed(timeout=5)
            # grpcio's own GOAWAY (its code and text are grpc core's).
            assert peer.goaway is not None
        finally:
            peer.close()


async def test_the_runtime_host_gives_the_door_grpc_max_connection_idle_seconds(
    settings: Any, transactional_db: None
) -> None:
    settings.GRPC_PORT = free_port()
    settings.GRPC_MAX_CONNECTION_IDLE_SECONDS = LIMIT
    settings.GRPC_SERVER = "lean"
    host = await runtime_host.ensure_started()
    try:
        assert host.grpc_door is not None
        peer = await RawPeer.connect(host.grpc_door.port)
        try:
            await peer.until_closed(timeout=5)
            assert peer.goaway == (NO_ERROR, b"max_idle")
        finally:
            peer.close()
    finally:
        await runtime_host.shutdown(drain_timeout=0)


def test_the_limit_works_the_same_on_uvloop() -> None:
    # This module's async tests run on asyncio's loop; the door also runs on
    # uvloop (config.serve), whose timers are its own.
    async def scenarios() -> None:
        async with scheduler_with(LIMIT) as sched:
            assert await sent_away_when_idle(sched) >= LIMIT - EARLY
            await sent_away_after_its_last_stream(sched)

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        assert isinstance(runner.get_loop(), uvloop.Loop)
        runner.run(scenarios())


# -- the timer's bookkeeping, on a fake clock ----------------------------------


class FakeTimer:
    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when, self.callback, self.cancelled = when, callback, False

    def cancel(self) -> None:
        self.cancelled = True


class FakeLoop:
    """The loop's clock and timers, moved by hand (`advance`)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.timers: list[FakeTimer] = []

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback: Callable[..., None], *args: Any) -> FakeTimer:
        timer = FakeTimer(when, lambda: callback(*args))
        self.timers.append(timer)
        return timer

    def call_later(self, delay: float, callback: Callable[..., None], *args: Any) -> FakeTimer:
        return self.call_at(self.now + delay, callback, *args)

    def armed(self) -> list[float]:
        """When the timers not yet fired nor cancelled are due."""
        return sorted(t.when for t in self.timers if not t.cancelled)

    def advance(self, to: float) -> None:
        while True:
            due = [t for t in self.timers if not t.cancelled and t.when <= to]
            if not due:
                break
            timer = min(due, key=lambda t: t.when)
            self.timers.remove(timer)
            self.now = timer.when
            timer.callback()
        self.now = to


class FakeTransport:
    def __init__(self) -> None:
        self.written = bytearray()
        self.closed = False

    def write(self, data: bytes) -> None:
        self.written += data

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def goaways(self) -> list[tuple[int, bytes]]:
        found, data, offset = [], bytes(self.written), 0
        while offset + 9 <= len(data):
            word, _, _ = struct.unpack_from(">IBI", data, offset)
            payload = data[offset + 9 : offset + 9 + (word >> 8)]
            if word & 0xFF == GOAWAY:
                found.append((int.from_bytes(payload[4:8], "big"), payload[8:]))
            offset += 9 + (word >> 8)
        return found


class Door(Http2Connection):
    """A server connection that only keeps its streams, for the tests to end."""

    def stream_opened(self, stream: Http2Stream, headers: dict[str, str], end: bool) -> None:
        self.opened = stream

    def stream_data(self, stream: Http2Stream, payload: bytes, end: bool) -> None:
        pass

    def stream_reset(self, stream: Http2Stream, code: int) -> None:
        pass


async def fake_door(limit: float) -> tuple[Door, FakeLoop, FakeTransport]:
    fake, transport = FakeLoop(), FakeTransport()
    conn = Door(batch_writes=0, max_connection_idle=limit)
    conn.loop = fake  # type: ignore[assignment]
    conn.connection_made(transport)  # type: ignore[arg-type]
    conn.data_received(PREFACE + frame(SETTINGS, 0, 0))
    return conn, fake, transport


def open_and_end_a_stream(conn: Door, stream_id: int) -> Http2Stream:
    block = encode_headers(request_headers(NOTIFY))
    conn.data_received(frame(HEADERS, END_HEADERS | END_STREAM, stream_id, block))
    return conn.opened


async def test_a_stream_that_comes_and_goes_restarts_the_idle_count_with_one_timer() -> None:
    conn, fake, transport = await fake_door(10.0)
    assert fake.armed() == [10.0]  # from the preface (its own timer cancelled)

    fake.advance(6.0)
    stream = open_and_end_a_stream(conn, 1)
    fake.advance(8.0)
    conn.send_headers(stream, encode_headers([(":status", "200")]), end=True)  # its end
    assert fake.armed() == [10.0]  # no new timer: the armed one looks again

    fake.advance(17.9)
    assert transport.goaways() == [] and not transport.closed
    assert fake.armed() == [18.0]  # 10 s from the stream's end

    fake.advance(18.0)
    assert transport.goaways() == [(NO_ERROR, b"max_idle")]
    assert transport.closed
    assert fake.armed() == []


async def test_a_stream_open_when_the_timer_fires_leaves_the_connection_alone() -> None:
    conn, fake, transport = await fake_door(10.0)
    stream = open_and_end_a_stream(conn, 1)  # open (its reply not yet sent)

    fake.advance(50.0)
    assert transport.goaways() == [] and not transport.closed
    assert conn._idle_timer is None  # fired, found a stream, armed nothing

    conn.send_headers(stream, encode_headers([(":status", "200")]), end=True)
    fake.advance(59.0)
    assert not transport.closed
    fake.advance(60.0)
    assert transport.goaways() == [(NO_ERROR, b"max_idle")]


async def test_a_lost_connection_keeps_no_idle_timer() -> None:
    conn, fake, transport = await fake_door(10.0)
    timer = conn._idle_timer
    assert timer is not None

    conn.connection_lost(None)

    assert timer.cancelled and conn._idle_timer is None
    fake.advance(100.0)
    assert transport.goaways() == []
