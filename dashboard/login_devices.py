"""Device cookies: a browser that has logged in as a user is not held by that user name's lockout.

A lockout per user name lets anyone lock any named account out: five wrong
passwords for "alice" from anywhere, and alice herself was refused for
`LOGIN_LOCKOUT_SECONDS`. So a login that works leaves a signed cookie in
its browser naming the user (its name and its database ID) and a random
device ID, and a later attempt for
that user carrying it is counted against the device instead of the user
name (dashboard/login_throttle.py): strangers' failures, which lock the
user name, do not hold it up, and its own `LOGIN_FAILURE_LIMIT` wrong
passwords lock out only that browser. The per-address limit holds for
everyone. This is OWASP's "device cookie" defence against online guessing.

A cookie that fails its signature (forged, altered, signed with an older
`SECRET_KEY`), that is older than a year or that names another user is
ignored: the attempt is counted against the user name as a stranger's. A
user deleted and created again under the same name is another user: the
database ID in the cookie tells them apart, so the browsers of the first
are strangers to the second.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.http import HttpRequest, HttpResponse

from api.middleware import RequestMiddleware

__all__ = ["COOKIE", "MAX_AGE", "DeviceCookieMiddleware", "device_for", "remember_device"]

COOKIE = "qi_login_device"
MAX_AGE = 365 * 24 * 3600
_SALT = "dashboard.login_devices"


def _cookie(request: HttpRequest) -> tuple[str, str, str] | None:
    """(user name, user ID, device ID) from the request's cookie, if it is genuine."""
    value = request.COOKIES.get(COOKIE)
    if not value:
        return None
    try:
        payload = signing.loads(value, salt=_SALT, max_age=MAX_AGE)
    except signing.BadSignature:  # SignatureExpired is one too
        return None
    if not isinstance(payload, dict):
        return None
    user, user_id, device = payload.get("u"), payload.get("i"), payload.get("d")
    if not all(isinstance(v, str) for v in (user, user_id, device)) or not device:
        return None
    return user, user_id, device


def _user_id(username: str) -> str | None:
    """The database ID (as text) of the user named `username`; None: no such user."""
    model = get_user_model()
    found = model._default_manager.filter(**{model.USERNAME_FIELD: username})
    pk = found.values_list("pk", flat=True).first()
    return None if pk is None else str(pk)


def device_for(request: HttpRequest | None, username: str | None) -> str | None:
    """The device ID of a browser that has logged in as `username`, else None."""
    if request is None or not username:
        return None
    return _device(request, username, _user_id(username))


def _device(request: HttpRequest, username: str, user_id: str | None) -> str | None:
    """The device ID of the request's cookie if it names this user: this name
    and this database ID."""
    known = _cookie(request)
    # Exactly: "Alice" is another account than "alice", and her cookies
    # let her spread guesses at alice's password over devices.
    if known is None or known[0] != username or known[1] != user_id:
        return None
    return known[2]


def remember_device(request: HttpRequest, username: str, user_id: str) -> None:
    """After a login that worked: the response gives the browser its cookie.

    A browser already known for this user keeps its device ID, so its count
    (if any) stays its own. Set by `DeviceCookieMiddleware`, because the
    admin's login view, not ours, answers admin logins.
    """
    # The user is known here: no need to look its ID up (`device_for`).
    device = _device(request, username, user_id) or secrets.token_urlsafe(16)
    payload = {"u": username, "i": user_id, "d": device}
    request.login_device_cookie = signing.dumps(payload, salt=_SALT)  # type: ignore[attr-defined]


class DeviceCookieMiddleware(RequestMiddleware):
    """Sets the device cookie on the response to a login that worked."""

    def amend(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        value = getattr(request, "login_device_cookie", None)
        if value is not None:
            response.set_cookie(
                COOKIE,
                value,
                max_age=MAX_AGE,
                secure=settings.SESSION_COOKIE_SECURE,
                httponly=True,
                samesite="Lax",
            )
        return response
