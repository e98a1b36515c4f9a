"""A real Daphne (on uvloop, the default) ends reset connections and keeps reaping."""

from __future__ import annotations

import http.client
import os
import socket
import struct
import time
from collections.abc import Iterator

import pytest

from loadgen.daphne_process import DaphneProcess

APP = "tests.config.daphne_probe_app:application"


@pytest.fixture(scope="module")
def server() -> Iterator[DaphneProcess]:
    with DaphneProcess(grpc=False, application=APP) as daphne:
        yield daphne


def get(server: DaphneProcess, path: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def held_after_reaping(server: DaphneProcess) -> int:
    """Connections the server still holds once its reaper has run (it runs each second)."""
    time.sleep(2.5)
    status, body = get(server, "/connections")
    assert status == 200
    return int(body)


def socket_count(pid: int) -> int:
    folder = f"/proc/{pid}/fd"
    return sum(os.readlink(f"{folder}/{fd}").startswith("socket:") for fd in os.listdir(folder))


def test_connections_reset_before_their_answer_are_ended_and_forgotten(
    server: DaphneProcess,
) -> None:
    assert server.proc is not None
    baseline = held_after_reaping(server)
    sockets = socket_count(server.proc.pid)
    for _ in range(10):
        # The request and the reset reach the server together (SO_LINGER 0).
        client = socket.create_connection(("127.0.0.1", server.port))
        client.sendall(b"GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()
    assert held_after_reaping(server) == baseline
    # Each reset socket was closed (our own last request's may take a moment).
    deadline = time.monotonic() + 5
    while socket_count(server.proc.pid) > sockets and time.monotonic() < deadline:
        time.sleep(0.05)
    assert socket_count(server.proc.pid) <= sockets
    assert "Exception inside application" not in server.log()


def test_an_application_failing_after_its_response_started_leaves_the_reaper_running(
    server: DaphneProcess,
) -> None:
    with pytest.raises((http.client.IncompleteRead, ConnectionResetError)):
        get(server, "/broken")  # the connection is ended mid-response
    for _ in range(20):
        assert get(server, "/healthz") == (200, b"ok")
    # Had the reaper stopped, all of those would still be held.
    assert held_after_reaping(server) <= 1
