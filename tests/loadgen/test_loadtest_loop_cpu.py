"""`manage.py loadtest` reads the server's event-loop CPU from its /metrics."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from loadgen.loadtest import loop_cpu_seconds

BODY = b"""# HELP queue_inspector_event_loop_cpu_seconds_total CPU time of the loop thread.
# TYPE queue_inspector_event_loop_cpu_seconds_total counter
queue_inspector_event_loop_cpu_seconds_total 12.75
queue_inspector_event_loop_lag_seconds_count 3.0
"""


class Metrics(BaseHTTPRequestHandler):
    body = BODY

    def do_GET(self) -> None:  # noqa: N802 - the standard library's name
        status = 200 if self.path == "/metrics" else 404
        self.send_response(status)
        self.end_headers()
        self.wfile.write(self.body if status == 200 else b"")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def served() -> Iterator[tuple[str, type[Metrics]]]:
    handler = type("Handler", (Metrics,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def test_the_loop_counter_is_read_from_the_scrape(served: tuple[str, type[Metrics]]) -> None:
    url, _ = served
    assert loop_cpu_seconds(url) == 12.75


def test_a_server_without_the_series_or_without_an_answer_gives_none(
    served: tuple[str, type[Metrics]],
) -> None:
    url, handler = served
    handler.body = b"process_cpu_seconds_total 3.0\n"
    assert loop_cpu_seconds(url) is None
    assert loop_cpu_seconds("http://127.0.0.1:9") is None  # nothing listens on the discard port
