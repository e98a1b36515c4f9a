import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from api.wire import runtime_host
from config.asgi import application


@pytest.fixture(autouse=True)
async def no_leftover_runtime(settings: Any) -> AsyncIterator[None]:
    """The ASGI application starts the runtime on its first scope; stop it after each
    test so no later test inherits a runtime (and gRPC door) bound to a closed loop."""
    settings.GRPC_PORT = 0
    yield
    await runtime_host.shutdown(drain_timeout=0)


async def asgi_get(path: str) -> tuple[int, bytes]:
    """One GET through the ASGI application: its status and whole body."""
    status, _, body = await asgi_response(path)
    return status, body


async def asgi_response(path: str) -> tuple[int, dict[bytes, bytes], bytes]:
    """One GET through the ASGI application, collecting every body chunk."""
    sent: list[dict[str, Any]] = []
    requests = [{"type": "http.request", "body": b"", "more_body": False}]
    never = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if requests:
            return requests.pop()
        await never.wait()  # the client stays connected until the response ends
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1")],
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 5000),
    }
    await application(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], dict(start.get("headers", [])), body


@pytest.mark.django_db(transaction=True)
async def test_daphne_serves_static_files_itself_with_debug_off() -> None:
    status, headers, body = await asgi_response("/static/admin/css/base.css")
    assert status == 200
    assert b"body" in body
    assert headers[b"X-Content-Type-Options"] == b"nosniff"
    # Pages and API answers are private (api.middleware.PrivateCacheMiddleware); these are not.
    assert b"private" not in headers.get(b"Cache-Control", b"")


@pytest.mark.django_db(transaction=True)
async def test_healthz_answers_through_the_asgi_application() -> None:
    assert await asgi_get("/healthz") == (200, b'{"status": "ok"}')


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "path",
    [
        "/static/../config/settings.py",  # Daphne hands the decoded %2e%2e on as ".."
        "/static/admin/../../config/settings.py",
        "/static/admin/css/base.css\x00.txt",
        "/static/no-such-file.css",
    ],
)
async def test_a_static_path_outside_the_static_files_is_a_404_never_a_500(path: str) -> None:
    status, body = await asgi_get(path)
    assert status == 404
    assert b"SECRET_KEY" not in body
