"""Who may scrape `/metrics` when `METRICS_REQUIRE_LOGIN` is on.

A person signed in to the pages, or an API token with the viewer or editor
role sent as `Authorization: Bearer <token>`: that is how Prometheus
authenticates a scrape (`authorization: {credentials: ...}` in a scrape
config), and it cannot keep a login session. Frontend and querier tokens
are for the wire protocols and may not read metrics, as they may not read
the REST API.

A database that does not answer (`api.store.exceptions.DATABASE_UNREACHABLE`)
is a 503 with Retry-After, as at REST and the websocket door: the scrape
may be refused only because nobody could check it. Any other database
error (a table missing after a failed migration) is a fault to fix, not a
wait: it goes on to Django's 500 and the server log, as it does at REST.
"""

from __future__ import annotations

import logging

from channels.db import database_sync_to_async
from django.http import HttpRequest, HttpResponse

from api.store.exceptions import DATABASE_DOWN_RETRY_SECONDS, DATABASE_UNREACHABLE
from api.store.roles import role_of, token_from_header
from api.store.services import api_token_authenticate

__all__ = ["scrape_refusal"]

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="metrics"'}

log = logging.getLogger(__name__)


def _answer(status: int, text: str, headers: dict[str, str] | None = None) -> HttpResponse:
    return HttpResponse(text + "\n", status=status, content_type="text/plain", headers=headers)


async def scrape_refusal(request: HttpRequest) -> HttpResponse | None:
    """None if this request may scrape; otherwise the answer saying why not."""
    try:
        return await _refusal(request)
    except DATABASE_UNREACHABLE as exc:
        # Not a bad token nor a bad login: a 401 would send operators to
        # their credentials, a 500 to the code.
        log.warning("/metrics answered 503: the database did not answer (%s)", exc)
        retry = {"Retry-After": str(DATABASE_DOWN_RETRY_SECONDS)}
        return _answer(503, "the database is unavailable", retry)


async def _refusal(request: HttpRequest) -> HttpResponse | None:
    header = request.headers.get("Authorization", "")
    if header:
        plaintext = token_from_header(header)
        if plaintext is None:
            return _answer(401, "malformed Authorization header", _CHALLENGE)
        token = await database_sync_to_async(api_token_authenticate)(plaintext)
        if token is None:
            return _answer(401, "invalid, revoked or expired token", _CHALLENGE)
        if role_of(token) is None:
            return _answer(403, "this needs a token with the viewer or editor role")
        return None
    # A session cookie is read from the database too.
    user = await request.auser()
    if user.is_authenticated:
        return None
    return _answer(401, "login or a viewer token required", _CHALLENGE)
