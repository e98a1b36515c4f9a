"""Who may scrape `/metrics` when `METRICS_REQUIRE_LOGIN` is on.

A person signed in to the pages, or an API token with the viewer or editor
role sent as `Authorization: Bearer <token>`: that is how Prometheus
authenticates a scrape (`authorization: {credentials: ...}` in a scrape
config), and it cannot keep a login session. Frontend and querier tokens
are for the wire protocols and may not read metrics, as they may not read
the REST API.
"""

from __future__ import annotations

from channels.db import database_sync_to_async
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse

from api.store.exceptions import DATABASE_DOWN_RETRY_SECONDS
from api.store.roles import role_of, token_from_header
from api.store.services import api_token_authenticate

__all__ = ["scrape_refusal"]

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="metrics"'}


def _answer(status: int, text: str, headers: dict[str, str] | None = None) -> HttpResponse:
    return HttpResponse(text + "\n", status=status, content_type="text/plain", headers=headers)


async def scrape_refusal(request: HttpRequest) -> HttpResponse | None:
    """None if this request may scrape; otherwise the answer saying why not."""
    header = request.headers.get("Authorization", "")
    if header:
        plaintext = token_from_header(header)
        if plaintext is None:
            return _answer(401, "malformed Authorization header", _CHALLENGE)
        try:
            token = await database_sync_to_async(api_token_authenticate)(plaintext)
        except DatabaseError:
            # As REST does: an unreachable database is not a bad token.
            retry = {"Retry-After": str(DATABASE_DOWN_RETRY_SECONDS)}
            return _answer(503, "the database is unavailable", retry)
        if token is None:
            return _answer(401, "invalid, revoked or expired token", _CHALLENGE)
        if role_of(token) is None:
            return _answer(403, "this needs a token with the viewer or editor role")
        return None
    user = await request.auser()
    if user.is_authenticated:
        return None
    return _answer(401, "login or a viewer token required", _CHALLENGE)
