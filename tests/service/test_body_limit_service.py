"""Bodies larger than any endpoint takes are refused as they arrive, on a real Daphne.

Before, Twisted took in the whole body (a 150 MiB one from an anonymous
client was stored, then read back, before the 401) and a `Content-Length`
of a terabyte held the connection open. Now the answer is 413 at once,
before any of it is stored or the application sees the request.
"""

from __future__ import annotations

import http.client
import json
import socket

from config.body_limit import MAX_BODY_BYTES
from loadgen.daphne_process import DaphneProcess


def _connect(server: DaphneProcess) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=30)


def _answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """The whole response, read until the server closes the connection."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    return int(status_line.split()[1]), headers, body


def test_a_body_declared_over_the_limit_is_refused_before_it_is_sent(
    daphne_server: DaphneProcess,
) -> None:
    with _connect(daphne_server) as sock:
        sock.sendall(
            b"POST /api/v1/explain/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nExpect: 100-continue\r\n"
            b"Content-Length: 1000000000000\r\n\r\n"
        )
        status, headers, body = _answer(sock)

    assert status == 413
    assert headers["Connection"] == "close"
    detail = json.loads(body)["detail"]
    assert "1000000000000 bytes" in detail and str(MAX_BODY_BYTES) in detail
    assert b"100 Continue" not in body


def test_a_chunked_body_is_refused_once_it_grows_past_the_limit(
    daphne_server: DaphneProcess,
) -> None:
    piece = b"x" * (1024 * 1024)
    with _connect(daphne_server) as sock:
        sock.sendall(
            b"PUT /api/v1/runtime-config/?token=qi_in_the_url HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/yaml\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        for _ in range(MAX_BODY_BYTES // len(piece)):
            sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        # One byte more, its chunk left open: nothing unread once it is refused.
        sock.sendall(b"1\r\nx")
        status, _, body = _answer(sock)

    assert status == 413
    assert "chunked body grew past" in json.loads(body)["detail"]
    # Said once, by the refusal; the application never answered it (no access line).
    log = daphne_server.log()
    said = "PUT /api/v1/runtime-config/?token=[redacted] from 127.0.0.1: a chunked body grew"
    assert said in log and "qi_in_the_url" not in log
    assert '"PUT /api/v1/runtime-config/' not in log


def test_a_client_that_sends_its_whole_body_before_reading_still_reads_the_413(
    daphne_server: DaphneProcess,
) -> None:
    # As Python's http.client, urllib and requests do: the socket was closed
    # with their bytes unread, and they saw a broken pipe, not the answer.
    connection = http.client.HTTPConnection("127.0.0.1", daphne_server.port, timeout=60)
    try:
        connection.request(
            "PUT",
            "/api/v1/runtime-config/",
            body=b"#" * (MAX_BODY_BYTES + 1024 * 1024),
            headers={"Content-Type": "application/yaml"},
        )
        response = connection.getresponse()
        assert response.status == 413
        assert "request body too large" in json.loads(response.read())["detail"]
    finally:
        connection.close()
    assert "refused (413)" in daphne_server.log()
