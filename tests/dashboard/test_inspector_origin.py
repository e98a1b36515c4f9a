"""Which pages may open the inspector socket: the site's own origin, or a trusted one."""

from __future__ import annotations

from typing import Any

import pytest
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.test import Client

from dashboard import live
from dashboard.access import socket_origin_allowed
from dashboard.live import Broadcaster
from dashboard.routing import websocket_urlpatterns
from tests.dashboard.test_consumers import QueueSource

SITE = "scheduler.example.com:8000"


def scope(*headers: tuple[str, str], scheme: str = "ws") -> dict[str, Any]:
    return {
        "type": "websocket",
        "scheme": scheme,
        "headers": [(name.encode(), value.encode()) for name, value in headers],
    }


@pytest.fixture(autouse=True)
def site(settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["scheduler.example.com", "localhost"]
    settings.CSRF_TRUSTED_ORIGINS = []
    settings.SECURE_PROXY_SSL_HEADER = None


def test_a_page_of_the_site_itself_may_open_the_socket() -> None:
    assert socket_origin_allowed(scope(("host", SITE), ("origin", f"http://{SITE}")))


def test_a_page_on_another_port_of_the_same_host_may_not() -> None:
    # Same site (the browser sends it the session cookie), another origin.
    assert not socket_origin_allowed(
        scope(("host", SITE), ("origin", "http://scheduler.example.com:3000"))
    )
    assert not socket_origin_allowed(
        scope(("host", SITE), ("origin", "http://scheduler.example.com"))
    )


def test_a_page_of_another_allowed_host_may_not() -> None:
    assert not socket_origin_allowed(scope(("host", SITE), ("origin", "http://localhost:8000")))


def test_with_every_host_allowed_a_foreign_page_still_may_not(settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["*"]
    assert not socket_origin_allowed(scope(("host", SITE), ("origin", "https://evil.example")))
    assert socket_origin_allowed(scope(("host", SITE), ("origin", f"https://{SITE}")))


def test_a_host_outside_allowed_hosts_is_refused_whatever_the_origin() -> None:
    host = "rebound.example:8000"
    assert not socket_origin_allowed(scope(("host", host), ("origin", f"http://{host}")))


def test_no_origin_a_null_one_or_two_of_them_are_refused() -> None:
    assert not socket_origin_allowed(scope(("host", SITE)))
    assert not socket_origin_allowed(scope(("host", SITE), ("origin", "null")))
    assert not socket_origin_allowed(
        scope(("host", SITE), ("origin", f"http://{SITE}"), ("origin", "http://evil.example"))
    )


def test_behind_tls_only_the_https_page_may(settings: Any) -> None:
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    proxied = ("x-forwarded-proto", "https")
    assert socket_origin_allowed(scope(("host", SITE), proxied, ("origin", f"https://{SITE}")))
    assert not socket_origin_allowed(scope(("host", SITE), proxied, ("origin", f"http://{SITE}")))
    assert not socket_origin_allowed(
        scope(("host", SITE), ("origin", f"http://{SITE}"), scheme="wss")
    )


def test_csrf_trusted_origins_are_trusted_here_too(settings: Any) -> None:
    settings.CSRF_TRUSTED_ORIGINS = ["https://inspector.example.com", "https://*.ops.example.com"]
    behind_proxy = ("host", "scheduler.example.com")
    for trusted in ("https://inspector.example.com", "https://a.ops.example.com"):
        assert socket_origin_allowed(scope(behind_proxy, ("origin", trusted)))
    for untrusted in ("http://inspector.example.com", "https://ops.example.com.evil.example"):
        assert not socket_origin_allowed(scope(behind_proxy, ("origin", untrusted)))


@pytest.mark.django_db(transaction=True)
async def test_the_inspector_refuses_a_logged_in_user_on_a_page_of_another_origin() -> None:
    live.install_broadcaster(Broadcaster(QueueSource(), autostart=False))
    try:
        cookie = await database_sync_to_async(editor_cookie)()
        application = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        opened = {}
        for origin in (f"http://{SITE}", "http://scheduler.example.com:3000"):
            headers = [(b"host", SITE.encode()), (b"origin", origin.encode()), cookie]
            socket = WebsocketCommunicator(application, "/ws/inspector/", headers=headers)
            opened[origin], code = await socket.connect()
            if not opened[origin]:
                assert code == 4403
            await socket.disconnect()
        assert opened == {f"http://{SITE}": True, "http://scheduler.example.com:3000": False}
    finally:
        live.install_broadcaster(None)


def editor_cookie() -> tuple[bytes, bytes]:
    editor = User.objects.create_superuser("origin-editor", password="pw-origin-123")
    client = Client()
    client.force_login(editor)
    return b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()
