"""Each HTTP request's response is freed when it ends, not left to the cyclic collector."""

from __future__ import annotations

import asyncio
import gc
import traceback
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpResponseBase

from config.http_cycles import ReleaseDisconnectListener

pytestmark = pytest.mark.django_db


@pytest.fixture
def no_collector() -> Iterator[None]:
    """Cyclic garbage stays where gc.get_objects() finds it."""
    gc.collect()
    gc.disable()
    yield
    gc.enable()
    gc.collect()


def responses_alive() -> int:
    # By type: isinstance() of a dead weak proxy among them raises.
    return sum(issubclass(type(o), HttpResponseBase) for o in gc.get_objects())


async def serve_as_daphne(app: Any, path: str) -> int:
    """One GET as Daphne serves it: `http.disconnect` once the response is sent."""
    sent = asyncio.Event()
    status: list[int] = []
    messages = [{"type": "http.request", "body": b"", "more_body": False}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await sent.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])
        elif not message.get("more_body"):
            sent.set()

    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
    }
    await app(scope, receive, send)
    return status[0]


async def test_a_finished_requests_response_is_freed_without_the_cyclic_collector(
    no_collector: None,
) -> None:
    before = responses_alive()
    for _ in range(3):
        assert await serve_as_daphne(ReleaseDisconnectListener(ASGIHandler()), "/login/") == 200
    assert responses_alive() == before


async def test_without_it_each_response_waits_for_the_cyclic_collector(
    no_collector: None,
) -> None:
    # What the middleware is for: should Django stop making the cycle, this
    # fails and the middleware can go.
    before = responses_alive()
    for _ in range(3):
        assert await serve_as_daphne(ASGIHandler(), "/login/") == 200
    assert responses_alive() == before + 3


async def test_a_listener_that_failed_otherwise_keeps_its_traceback() -> None:
    # Django re-raises the listener's AssertionError for a message no ASGI
    # server should send: where it came from is what the log must show.
    messages = [{"type": "http.request", "body": b""}, {"type": "http.bogus"}]

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else await asyncio.Future()

    async def send(message: dict[str, Any]) -> None:
        await asyncio.sleep(0.05)  # slower than the listener's bogus message

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/login/",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1")],
    }
    with pytest.raises(AssertionError) as raised:
        await ReleaseDisconnectListener(ASGIHandler())(scope, receive, send)
    assert "listen_for_disconnect" in "".join(traceback.format_tb(raised.value.__traceback__))
