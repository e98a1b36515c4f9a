"""ASGI entry point: HTTP to Django, websockets to the two kinds of client.

Machine clients (frontends, queriers, the benchmark relay) authenticate by
token and are not browsers, so they get no origin check. Every other
websocket path belongs to browsers (the live inspector from
`dashboard.routing`) and goes through the session and an origin check.

Daphne has no ASGI lifespan, so `config.serve` starts the scheduler runtime
as Daphne's loop starts (`LazyRuntimeStart.start`), and otherwise (another
ASGI server, tests) the first scope does; the task is kept and its failure
logged (consumers also await `ensure_started()`, which retries a failed
start).
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import logging
import os
from http import HTTPStatus
from typing import Any

import autobahn.util as autobahn_util
from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from django.conf import settings
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application
from django.core.exceptions import SuspiciousOperation
from django.http import Http404
from django.urls import re_path
from twisted.web import http as twisted_http

__all__ = [
    "MACHINE_PREFIXES",
    "LazyRuntimeStart",
    "StaticFiles",
    "WebsocketSplit",
    "application",
]

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


class StaticFiles(ASGIStaticFilesHandler):
    """Django's static file handler, answering 404 for a path outside the static roots,
    with `nosniff` as every other response has it.

    Django's finders raise `SuspiciousFileOperation` for `/static/%2e%2e/...`
    (and the OS a `ValueError` for a NUL), which the stock handler lets
    through as a 500; no such path names a static file, so it is a 404.
    """

    def serve(self, request: Any) -> Any:
        try:
            response = super().serve(request)
        except (SuspiciousOperation, ValueError) as exc:
            raise Http404("no such static file") from exc
        # Middleware never sees these: a file is only ever its declared type.
        response["X-Content-Type-Options"] = "nosniff"
        return response


# Django must be set up before anything imports models, hence this order.
# Daphne serves /static/ itself (there is no separate web server in the
# embedded setup), so pages and the admin work offline with DEBUG off.
django_asgi_app = StaticFiles(get_asgi_application())

from api.rest.abandon import AbandonOnDisconnect  # noqa: E402
from api.wire import (  # noqa: E402, F401 - metrics: observer from the start
    metrics,
    runtime_host,
    traffic_recording,  # noqa: E402, F401 - the what-if recorder, from the start
)
from api.wire.routing import websocket_urlpatterns as machine_urlpatterns  # noqa: E402
from config.http_cycles import ReleaseDisconnectListener  # noqa: E402

log = logging.getLogger(__name__)

# A live view builds tens of thousands of small rows per tick at 10,000
# tenants, so at CPython's default gen-0 threshold (700) the collector runs
# dozens of times per tick and its full passes walk every queued request.
# Objects alive after start-up are frozen out of collection, and a higher
# threshold makes passes rare.
gc.freeze()
gc.set_threshold(settings.GC_GEN0_THRESHOLD, 20, 20)

# Twisted names no reason phrase for 422, 428, 429, 431 or 451, so Daphne's
# status line read `HTTP/1.1 429 Unknown Status` (the line proxies and
# clients log). The standard phrases, for every code Twisted lacks.
for _status in HTTPStatus:
    twisted_http.RESPONSES.setdefault(_status.value, _status.phrase.encode())

# Daphne's websocket layer (autobahn) builds the arguments of its debug log
# lines on every frame, with debug logging off too, and colours them with
# click whenever click is importable (schemathesis, a dev dependency, brings
# it): about 2 us more per socket read and 0.5 us per frame sent (3.2 and
# 0.6 us against 1.2 and 0.14 plain), for text nobody sees. Its `hl` reads
# this flag on each call.
autobahn_util._HAS_CLICK = False  # noqa: SLF001 - no public switch for it

MACHINE_PREFIXES = ("/ws/frontend/", "/ws/querier/", "/ws/relay/")


def _browser_urlpatterns() -> list[Any]:
    """The dashboard's websocket routes, if that app provides any."""
    try:
        module = importlib.import_module("dashboard.routing")
    except ModuleNotFoundError as exc:
        if exc.name != "dashboard.routing":
            raise
        return []
    return list(module.websocket_urlpatterns)


async def refuse_unknown_path(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Refuse the handshake on a websocket path nobody serves (Daphne answers 403).

    Channels' router raises for such a path, which Daphne logged as an
    application error with a traceback and answered 500: any client could
    fill the error log by asking for made-up paths.
    """
    await receive()  # websocket.connect
    await send({"type": "websocket.close"})


NO_SUCH_PATH = re_path(r"", refuse_unknown_path)


class WebsocketSplit:
    """Token-authenticated machine paths one way, browser paths the other."""

    def __init__(self, machine: Any, browser: Any) -> None:
        self.machine = machine
        self.browser = browser

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        app = self.machine if scope["path"].startswith(MACHINE_PREFIXES) else self.browser
        return await app(scope, receive, send)


class LazyRuntimeStart:
    """Starts the scheduler runtime on the loop that serves the first scope, unless
    `start` (config.serve, as Daphne's loop starts) did already."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.task: asyncio.Task[Any] | None = None

    def start(self) -> None:
        """Start the runtime now, on the running loop (once; again after a failed start)."""
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(runtime_host.ensure_started())
            self.task.add_done_callback(self._started)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] in ("http", "websocket"):
            self.start()
        return await self.app(scope, receive, send)

    def _started(self, task: asyncio.Task[Any]) -> None:
        if task.cancelled() or task.exception() is None:
            return
        log.error("the scheduler runtime failed to start", exc_info=task.exception())
        self.task = None  # the next scope tries again


application = LazyRuntimeStart(
    ProtocolTypeRouter(
        {
            "http": ReleaseDisconnectListener(AbandonOnDisconnect(django_asgi_app)),
            "websocket": WebsocketSplit(
                URLRouter([*machine_urlpatterns, NO_SUCH_PATH]),
                AllowedHostsOriginValidator(
                    AuthMiddlewareStack(URLRouter([*_browser_urlpatterns(), NO_SUCH_PATH]))
                ),
            ),
        }
    )
)
