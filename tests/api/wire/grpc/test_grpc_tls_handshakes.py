"""A refused TLS handshake on the lean door is said in the log, counted, and leaves nothing behind.

Found with real Cortex v1.15.3: a querier without a client certificate and a
frontend with one from another CA retried hundreds of times a minute while
the scheduler logged nothing (asyncio and uvloop drop a failed server-side
handshake silently), and every attempt left a dead connection in the
server's list. These tests play those clients with grpcio and raw sockets;
the counter's tests use raw sockets, whose handshakes are exactly the ones
they make (a grpcio channel may redial within one call).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from api.wire.grpc.lean_server import LeanGrpcServer
from api.wire.grpc.server import GrpcFrontDoor, start_grpc_server
from api.wire.grpc.tls import ClientTls, ServerTls, dial, load_key_pair
from api.wire.grpc.tls_handshakes import (
    FAILURES,
    REASONS,
    HandshakeFailures,
    explain,
    failure_counter,
)
from scheduler_core.model import QueueConfig
from scheduler_core.pb import schedulerpb_pb2 as pb
from scheduler_core.pb.schedulerpb_pb2_grpc import SchedulerForQuerierStub
from scheduler_core.runtime import SchedulerRuntime
from tests.api.wire.grpc.certs import Issued, Pki, make_pki

LOGGER = "api.wire.grpc.tls_handshakes"


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path)


@pytest.fixture
async def door(pki: Pki) -> AsyncIterator[GrpcFrontDoor]:
    """A lean door with mutual TLS: clients need a certificate of the test CA."""
    runtime = SchedulerRuntime(QueueConfig(), forget_check_interval=3600.0)
    await runtime.start()
    tls = ServerTls(pki.server.cert, pki.server.key, client_ca=pki.ca.cert)
    door = await start_grpc_server(runtime, port=0, server_tls=tls, implementation="lean")
    yield door
    await door.stop(0)
    await runtime.stop(drain_timeout=0)


async def notify(door: GrpcFrontDoor, tls: ClientTls | None) -> grpc.StatusCode:
    """A NotifyQuerierShutdown call's status (OK when served)."""
    async with dial(f"127.0.0.1:{door.port}", tls) as channel:
        try:
            await SchedulerForQuerierStub(channel).NotifyQuerierShutdown(
                pb.NotifyQuerierShutdownRequest(querierID="probe"), timeout=5
            )
        except grpc.aio.AioRpcError as exc:
            return exc.code()
    return grpc.StatusCode.OK


async def settled(server: LeanGrpcServer, caplog: pytest.LogCaptureFixture, lines: int) -> None:
    """Until the server has `lines` handshake warnings and no connection left."""
    for _ in range(500):
        warned = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
        if len(warned) >= lines and not server.connections:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{len(server.connections)} connections left, log: {caplog.text}")


@pytest.fixture
def server(door: GrpcFrontDoor, caplog: pytest.LogCaptureFixture) -> LeanGrpcServer:
    """The door's lean server, its log captured from INFO."""
    caplog.set_level(logging.INFO, LOGGER)
    assert isinstance(door.server, LeanGrpcServer)
    return door.server


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


async def test_a_client_without_a_certificate_is_named_in_the_log_and_not_kept(
    server: LeanGrpcServer, door: GrpcFrontDoor, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:

    assert await notify(door, ClientTls(ca=pki.ca.cert)) == grpc.StatusCode.UNAVAILABLE
    await settled(server, caplog, 1)

    [line] = warnings_of(caplog)
    assert line.startswith("TLS handshake with gRPC client 127.0.0.1:")
    assert "it sent no client certificate, which GRPC_TLS_CLIENT_AUTH=" in line


async def test_a_certificate_of_another_ca_is_named_in_the_log_with_openssls_reason(
    door: GrpcFrontDoor, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, LOGGER)
    stranger = ClientTls(pki.ca.cert, pki.stranger.cert, pki.stranger.key)

    assert await notify(door, stranger) == grpc.StatusCode.UNAVAILABLE
    await settled(door.server, caplog, 1)  # type: ignore[arg-type]

    assert [line.split(" failed: ")[1] for line in warnings_of(caplog)] == [
        "its client certificate does not verify against GRPC_TLS_CA_PATH "
        "(unable to get local issuer certificate)"
    ]


async def test_a_plaintext_client_on_the_tls_door_is_told_to_enable_tls(
    door: GrpcFrontDoor, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, LOGGER)

    assert await notify(door, None) == grpc.StatusCode.UNAVAILABLE
    await settled(door.server, caplog, 1)  # type: ignore[arg-type]

    assert [line.split(" failed: ")[1] for line in warnings_of(caplog)] == [
        "it does not speak TLS (a plaintext client: set its tls-enabled)"
    ]


def test_a_client_that_refuses_the_doors_certificate_is_told_what_to_check() -> None:
    # grpc-go answers a certificate it cannot verify with a TLS alert (Cortex
    # did: "bad certificate"); grpcio and Python just close, which says nothing.
    why = explain(_ssl_error("SSLV3_ALERT_BAD_CERTIFICATE"))

    assert why == (
        "the client refused the door's certificate (TLS alert: bad certificate); its "
        "tls-ca-path must hold the CA of GRPC_TLS_CERT_PATH, and the host it dials (or its "
        "tls-server-name) must be one the certificate names"
    )
    assert explain(_ssl_error("TLSV1_ALERT_UNKNOWN_CA")) == why.replace(
        "bad certificate", "unknown ca"
    )
    assert explain(_ssl_error("TLSV1_ALERT_PROTOCOL_VERSION")) == (
        "the client ended the handshake (TLS alert: protocol version)"
    )
    assert explain(ssl.SSLEOFError(8, "EOF occurred in violation of protocol")) is None


async def test_a_connection_closed_before_its_handshake_is_forgotten_without_a_warning(
    door: GrpcFrontDoor, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, LOGGER)
    for _ in range(3):  # a TCP health check: connect, close
        _, writer = await asyncio.open_connection("127.0.0.1", door.port)
        writer.close()
        await writer.wait_closed()
    server = door.server
    assert isinstance(server, LeanGrpcServer)
    await settled(server, caplog, 0)

    assert warnings_of(caplog) == []


async def test_a_served_client_still_works_after_refused_ones(
    door: GrpcFrontDoor, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, LOGGER)
    assert await notify(door, ClientTls(ca=pki.ca.cert)) == grpc.StatusCode.UNAVAILABLE
    good = ClientTls(pki.ca.cert, pki.client.cert, pki.client.key)

    assert await notify(door, good) == grpc.StatusCode.OK


def test_repeated_failures_from_one_host_are_logged_once_per_interval_with_a_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, LOGGER)
    now = [0.0]
    failures = HandshakeFailures(interval=60.0, clock=lambda: now[0])
    refused = ConnectionError  # any error: only its explanation matters here
    no_cert = _ssl_error("PEER_DID_NOT_RETURN_A_CERTIFICATE")

    for second in range(0, 120, 2):  # a querier's workers retrying for two minutes
        now[0] = float(second)
        failures.failed("10.0.0.7", 40000 + second, no_cert)
    failures.failed("10.0.0.8", 40000, no_cert)  # another host: its own line
    failures.failed("10.0.0.9", 40000, refused())  # left before a handshake: DEBUG only

    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert [line.split(" failed: ")[0] for line in lines] == [
        "TLS handshake with gRPC client 10.0.0.7:40000",
        "TLS handshake with gRPC client 10.0.0.7:40060",
        "TLS handshake with gRPC client 10.0.0.8:40000",
    ]
    assert lines[1].endswith("(29 more from 10.0.0.7 in the last 60 s)")
    assert "more from" not in lines[2]


def _ssl_error(reason: str) -> Exception:
    exc = ssl.SSLError(1, f"[SSL: {reason}] ({reason.lower()})")
    exc.reason = reason  # type: ignore[misc]
    return exc


def counts(counter: Any = FAILURES) -> dict[str, float]:
    """The counter's value by reason, every series it has."""
    [family] = counter.collect()
    return {s.labels["reason"]: s.value for s in family.samples if s.name.endswith("_total")}


def client_context(pki: Pki, *, trust: bytes | None, show: Issued | None) -> ssl.SSLContext:
    """A TLS client trusting `trust` (None: the system's roots) and showing `show`'s certificate."""
    context = ssl.create_default_context(cadata=None if trust is None else trust.decode())
    if show is not None:
        load_key_pair(context, show.cert, show.key)
    return context


async def handshake(port: int, context: ssl.SSLContext) -> None:
    """One TLS handshake with the door, then read until it hangs up.

    On a blocking socket, as grpc-go's is: a client that refuses the door's
    certificate tells it with an alert there, where asyncio's transport
    resets the connection without one (the door then learns nothing).
    """

    def blocking() -> None:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            try:
                with context.wrap_socket(raw, server_hostname="localhost") as tls:
                    # With TLS 1.3 the client's half ends before the server
                    # checks its certificate: the refusal is the next thing read.
                    while tls.recv(4096):
                        pass
            except (ssl.SSLError, OSError):
                pass  # refused: what the door made of it is what is tested

    await asyncio.to_thread(blocking)


async def plaintext(port: int) -> None:
    """A client without TLS: the HTTP/2 preface a plaintext gRPC client opens with."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
    with contextlib.suppress(OSError):
        await asyncio.wait_for(reader.read(), 5)
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


async def counted(server: LeanGrpcServer, expected: dict[str, float]) -> dict[str, float]:
    """The counts once they reach `expected` and no connection is left (or as they are)."""
    for _ in range(500):
        now = counts()
        if now == expected and not server.connections:
            return now
        await asyncio.sleep(0.01)
    return counts()


async def test_every_refused_handshake_is_counted_by_reason_even_when_the_log_holds_it_back(
    server: LeanGrpcServer, door: GrpcFrontDoor, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    before = counts()
    no_certificate = client_context(pki, trust=pki.ca.cert, show=None)
    stranger = client_context(pki, trust=pki.ca.cert, show=pki.stranger)
    distrusting = client_context(pki, trust=None, show=pki.client)

    for _ in range(3):  # a querier's workers retrying: one log line, three failures
        await handshake(door.port, no_certificate)
    await handshake(door.port, stranger)
    await handshake(door.port, distrusting)
    await plaintext(door.port)

    expected = dict(before)
    expected["no_client_certificate"] += 3
    expected["client_certificate_not_verified"] += 1
    expected["server_certificate_refused"] += 1
    expected["not_tls"] += 1
    assert await counted(server, expected) == expected
    assert [line.split(" failed: ")[1][:20] for line in warnings_of(caplog)] == [
        "it sent no client ce",
        "its client certifica",
        "the client refused t",
        "it does not speak TL",
    ]


async def test_connections_closed_before_a_handshake_and_served_clients_are_not_counted(
    door: GrpcFrontDoor, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    server = door.server
    assert isinstance(server, LeanGrpcServer)
    before = counts()
    for _ in range(3):  # a TCP health check: connect, close
        _, writer = await asyncio.open_connection("127.0.0.1", door.port)
        writer.close()
        await writer.wait_closed()
    good = ClientTls(pki.ca.cert, pki.client.cert, pki.client.key)
    assert await notify(door, good) == grpc.StatusCode.OK
    await settled(server, caplog, 0)

    assert counts() == before


def test_the_counter_has_each_reason_at_zero_before_any_failure_and_no_other() -> None:
    counter = failure_counter()

    assert counts(counter) == dict.fromkeys(REASONS, 0.0)
    failures = HandshakeFailures(counter=counter)
    failures.failed("10.0.0.7", 40000, _ssl_error("TLSV1_ALERT_PROTOCOL_VERSION"))
    failures.failed("10.0.0.7", 40001, _ssl_error("NO_SHARED_CIPHER"))
    failures.failed("10.0.0.8", 40000, ConnectionResetError())  # left before a handshake
    assert counts(counter) == {**dict.fromkeys(REASONS, 0.0), "other": 2.0}
