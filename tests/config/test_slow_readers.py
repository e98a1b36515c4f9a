"""config.slow_readers on Twisted's fake clock: a websocket whose unsent backlog
over the limit does not shrink is aborted; one that shrinks or drains is kept."""

from __future__ import annotations

from typing import Any

import pytest
from twisted.internet.abstract import FileDescriptor
from twisted.internet.task import Clock

from config.slow_readers import UnsentWatch, unsent_bytes, watch


class FakeTransport:
    """A socket transport as Twisted's: a producer slot and a buffer size."""

    def __init__(self) -> None:
        self.bufferSize = 65_536
        # Twisted's FileDescriptor's unsent bytes: `unsent` sets them
        self.dataBuffer, self.offset, self._tempDataLen = b"", 0, 0
        self.disconnected = self.disconnecting = False
        self.producer: Any = "the HTTP channel"  # left registered by the upgrade
        self.streaming: bool | None = None
        self.aborted = False

    def unregisterProducer(self) -> None:  # noqa: N802
        self.producer = None

    def registerProducer(self, producer: Any, streaming: bool) -> None:  # noqa: N802
        assert self.producer is None, "a second producer would raise in Twisted"
        self.producer, self.streaming = producer, streaming

    def abortConnection(self) -> None:  # noqa: N802
        self.aborted = True

    def unsent(self, count: int) -> None:
        self.dataBuffer, self.offset, self._tempDataLen = b"x" * count, 0, 0


class FakeProtocol:
    client_addr = ["10.0.0.7", 40000]
    path = b"/ws/frontend/"

    def __init__(self, transport: Any) -> None:
        self.transport = transport


def watched(limit: int = 1_000_000, seconds: float = 10.0) -> tuple[FakeTransport, Clock]:
    transport, clock = FakeTransport(), Clock()
    watch(FakeProtocol(transport), clock, limit, seconds)
    return transport, clock


def test_the_watch_replaces_the_upgrade_s_producer_and_sets_the_limit() -> None:
    transport, _ = watched(limit=2_000_000)
    assert isinstance(transport.producer, UnsentWatch) and transport.streaming is True
    assert transport.bufferSize == 2_000_000


def test_under_tls_the_limit_is_set_on_the_socket_the_wrapper_writes_to() -> None:
    class TlsWrapper:
        def __init__(self, inner: FakeTransport) -> None:
            self.transport = inner
            self.producer: Any = None

        def unregisterProducer(self) -> None:  # noqa: N802
            self.producer = None

        def registerProducer(self, producer: Any, streaming: bool) -> None:  # noqa: N802
            self.producer = producer

    socket = FakeTransport()
    wrapper = TlsWrapper(socket)
    watch(FakeProtocol(wrapper), Clock(), 3_000_000, 10.0)
    assert socket.bufferSize == 3_000_000 and isinstance(wrapper.producer, UnsentWatch)


def test_a_backlog_that_does_not_shrink_for_the_grace_aborts_the_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    transport, clock = watched(seconds=10.0)
    transport.unsent(2_000_000)
    transport.producer.pauseProducing()
    clock.advance(9.9)
    transport.producer.pauseProducing()  # paused again: the look is not put off
    transport.unsent(2_500_000)  # more was sent to it, none read
    assert not transport.aborted
    clock.advance(0.1)
    assert transport.aborted
    assert "/ws/frontend/ from 10.0.0.7:40000" in caplog.text
    assert "backlog of 2500000 unsent bytes" in caplog.text


def test_a_client_reading_through_a_long_burst_is_kept_while_its_backlog_shrinks() -> None:
    transport, clock = watched(seconds=10.0)
    transport.unsent(50_000_000)
    transport.producer.pauseProducing()
    for backlog in range(45_000_000, 1_000_000, -5_000_000):
        transport.unsent(backlog)  # read faster than it was sent, for 90 s
        clock.advance(10.0)
        assert not transport.aborted
    transport.unsent(0)
    transport.producer.resumeProducing()  # drained: Twisted resumes it
    assert not clock.getDelayedCalls()
    # Paused again later, the look starts from the backlog then.
    transport.unsent(3_000_000)
    transport.producer.pauseProducing()
    transport.unsent(2_999_999)
    clock.advance(10.0)
    assert not transport.aborted
    clock.advance(10.0)  # nothing read since
    assert transport.aborted


def test_a_real_twisted_transport_still_has_the_buffer_the_watch_reads() -> None:
    class Reactor:
        def addWriter(self, _: Any) -> None:  # noqa: N802
            pass

        def removeWriter(self, _: Any) -> None:  # noqa: N802
            pass

    transport = FileDescriptor(reactor=Reactor())
    transport.connected = 1
    transport.write(b"a" * 10)
    transport.write(b"b" * 5)
    assert unsent_bytes(transport) == 15


def test_a_look_that_comes_after_the_connection_closed_does_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # autobahn's dropConnection unregisters the producer before the close,
    # so Twisted never calls its stopProducing and the timer still fires.
    transport, clock = watched(seconds=10.0)
    transport.unsent(2_000_000)
    transport.producer.pauseProducing()
    transport.disconnected = True
    clock.advance(10.0)
    assert not transport.aborted and "dropping" not in caplog.text


def test_a_connection_that_closes_while_paused_leaves_no_timer() -> None:
    transport, clock = watched()
    transport.producer.pauseProducing()
    transport.producer.stopProducing()
    assert not clock.getDelayedCalls()
