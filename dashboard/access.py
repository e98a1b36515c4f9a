"""Who may see and change what in the browser: login, then the viewer/editor role.

Roles come from `api.store.roles.role_of` (Django groups), the same rule the REST
API uses. Editing is enforced here, on the server, for every write; the
templates only hide controls a viewer could not use anyway. Browser
websockets also pass `socket_origin_allowed`, the websocket side of CSRF.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from importlib import import_module
from typing import Any
from urllib.parse import urlsplit

from asgiref.sync import async_to_sync
from django.conf import settings
from django.contrib.auth import HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.http.request import split_domain_port, validate_host
from django.shortcuts import render
from django.utils.crypto import constant_time_compare
from django.utils.http import is_same_domain

from api.store.roles import EDITOR, role_of
from dashboard.live import Tick, get_broadcaster

__all__ = [
    "current_tick",
    "editor_required",
    "forbidden",
    "page",
    "role_required",
    "session_still_allowed",
    "socket_origin_allowed",
]

View = Callable[..., HttpResponse]


def role_required(view: View) -> View:
    """Login, then any role; the role is put on `request.role`."""

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        role = role_of(request.user)
        if role is None:
            return forbidden(request, "Your account has neither the viewer nor the editor role.")
        request.role = role  # type: ignore[attr-defined]
        return view(request, *args, **kwargs)

    return wrapped


def editor_required(view: View) -> View:
    """Login and the editor role, for every request method."""

    @role_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.role != EDITOR:  # type: ignore[attr-defined]
            return forbidden(request, "Changing the configuration needs the editor role.")
        return view(request, *args, **kwargs)

    return wrapped


def page(
    request: HttpRequest, template: str, context: dict[str, Any], status: int = 200
) -> HttpResponse:
    """Render a page with the role the navigation and controls depend on."""
    role = getattr(request, "role", None)
    context = {"role": role, "is_editor": role == EDITOR, **context}
    return render(request, template, context, status=status)


def forbidden(request: HttpRequest, message: str) -> HttpResponse:
    """The 403 page saying what the user lacks."""
    return page(request, "403.html", {"message": message}, status=403)


async def _latest() -> Tick | None:
    return get_broadcaster().latest()


def current_tick() -> Tick | None:
    """The live queue from a sync view, or None before the scheduler started.

    The snapshot must be taken on the runtime's event loop; from a view
    running in Django's sync thread, `async_to_sync` runs it there.
    """
    try:
        return async_to_sync(_latest)()
    except RuntimeError:
        return None


def socket_origin_allowed(scope: dict[str, Any]) -> bool:
    """Whether a browser websocket comes from a page Django would take a form POST from.

    That is the site's own origin (the handshake's `Host`, by a host in
    `ALLOWED_HOSTS`) or one of `CSRF_TRUSTED_ORIGINS`. Channels'
    `AllowedHostsOriginValidator` (config.asgi) compares the Origin's host
    name only, so a page on any port or scheme of an allowed host passed:
    another service on the same machine (http://host:3000) is the same
    *site*, so the browser sends it the session cookie, and its script could
    read the live inspector as whoever is logged in; with `ALLOWED_HOSTS=*`
    any page could.
    """
    headers: dict[str, list[str]] = {}
    for name, value in scope.get("headers", ()):
        headers.setdefault(name.decode("latin-1").lower(), []).append(value.decode("latin-1"))
    origins, hosts = headers.get("origin", []), headers.get("host", [])
    if len(origins) != 1 or len(hosts) > 1:
        return False
    try:
        origin = urlsplit(origins[0].lower())
    except ValueError:
        return False
    if origin.scheme not in ("http", "https") or not origin.hostname:
        return False
    if not hosts:
        # Every browser's handshake carries Host (RFC 6455); without one there
        # is no site origin to compare with, and only a non-browser, which
        # could send any Origin anyway, would leave it out.
        return validate_host(origin.hostname, settings.ALLOWED_HOSTS)
    host = hosts[0].lower()
    domain, _ = split_domain_port(host)
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return False
    # A TLS proxy in front leaves the socket's own scheme unknown unless
    # SECURE_PROXY_SSL_HEADER says it; once it is known, it must match too.
    schemes = ("https",) if _socket_is_secure(scope, headers) else ("http", "https")
    if origin.scheme in schemes and origin.netloc == host:
        return True
    return _trusted_origin(origin.scheme, origin.netloc)


def _socket_is_secure(scope: dict[str, Any], headers: dict[str, list[str]]) -> bool:
    if scope.get("scheme") in ("wss", "https"):
        return True
    proxy = settings.SECURE_PROXY_SSL_HEADER
    if not proxy:
        return False
    name, secure_value = proxy
    values = headers.get(name.removeprefix("HTTP_").replace("_", "-").lower(), [])
    return bool(values) and values[0].split(",", 1)[0].strip() == secure_value


def _trusted_origin(scheme: str, netloc: str) -> bool:
    """`CSRF_TRUSTED_ORIGINS` as Django's CSRF check reads it (`https://*.example.com` too)."""
    for trusted in settings.CSRF_TRUSTED_ORIGINS:
        parts = urlsplit(trusted.lower())
        if parts.scheme != scheme:
            continue
        if "*" in parts.netloc:
            if is_same_domain(netloc, parts.netloc.lstrip("*")):
                return True
        elif parts.netloc == netloc:
            return True
    return False


def session_still_allowed(session_key: str | None, user_id: int | None) -> bool:
    """Whether an open inspector's login still holds: the session is stored and
    unexpired for that user, who is active, has the password the session was
    made with and still has a role.

    Checked again while the socket is open, so expiry, a deactivation, a
    password change or a removed role end it as a logout does (a revoked
    token ends its sockets).
    """
    if session_key is None:
        return False
    data = import_module(settings.SESSION_ENGINE).SessionStore(session_key).load()
    if str(data.get(SESSION_KEY)) != str(user_id):
        return False
    user = get_user_model().objects.filter(pk=user_id, is_active=True).first()
    if user is None or not _password_unchanged(data.get(HASH_SESSION_KEY), user):
        return False
    return role_of(user) is not None


def _password_unchanged(session_hash: str | None, user: Any) -> bool:
    """The session's password hash still matches, as Django checks it on each page.

    A password reset is how an operator shuts out someone holding a stolen
    login; Django then refuses that session's next page, but a socket makes
    no next request, so its inspector streamed on. Django's own check
    (`auth.get_user`) also rotates or flushes the session, which a
    background re-check must not do to a browser that is still logged in.
    """
    if not session_hash:
        return False
    hashes = [user.get_session_auth_hash(), *user.get_session_auth_fallback_hash()]
    return any(constant_time_compare(session_hash, known) for known in hashes)
