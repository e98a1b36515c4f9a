"""A refused TLS handshake on the lean door is said in the log, and leaves nothing behind.

Found with real Cortex v1.15.3: a querier without a client certificate and a
frontend with one from another CA retried hundreds of times a minute while
the scheduler logged nothing (asyncio and uvloop drop a failed server-side
handshake silently), and every attempt left a dead connection in the
server's list. These tests play those clients with grpcio and raw sockets.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from api.wire.grpc.lean_server import LeanGrpcServer
from api.wire.grpc.server import GrpcFrontDoor, start_grpc_server
from api.wire.grpc.tls import ClientTls, ServerTls, dial
from api.wire.grpc.tls_handshakes import HandshakeFailures, explain
from scheduler_core.model import QueueConfig
from scheduler_core.pb import schedulerpb_pb2 as pb
from scheduler_core.pb.schedulerpb_pb2_grpc import SchedulerForQuerierStub
from scheduler_core.runtime import SchedulerRuntime
from tests.api.wire.grpc.certs import Pki, make_pki

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


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


async def test_a_client_without_a_certificate_is_named_in_the_log_and_not_kept(
    door: GrpcFrontDoor, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, LOGGER)
    server = door.server
    assert isinstance(server, LeanGrpcServer)

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
