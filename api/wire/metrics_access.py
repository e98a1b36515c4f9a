"""Who may scrape `/metrics` when `METRICS_REQUIRE_LOGIN` is on.

A person signed in to the pages with the viewer or editor role, or an API
token with one of those roles sent as `Authorization: Bearer <token>`: that
is how Prometheus authenticates a scrape (`authorization: {credentials: ...}`
in a scrape config), and it cannot keep a login session. Frontend and querier tokens
are for the wire protocols and may not read metrics, as they may not read
the REST API.

A database that does not answer (`api.store.exceptions.DATABASE_UNREACHABLE`)
is a 503 with Retry-After, as at REST and the websocket door: the scrape
may be refused only because nobody could check it. Any other database
error (a table missing after a failed migration) is a fault to fix, not a
wait: it goes on to Django's 500 and the server log, as it does at REST.

One exception, because a database outage is when an operator needs the
scheduler's metrics most: a token the database accepted for a scrape
within the last `SCRAPE_GRACE_SECONDS` still scrapes while the database
does not answer (`RecentScrapers`), until its expiry if it has one. Every
scrape with the database up is checked there, so a revocation takes effect
at the next scrape as before; only one made during the outage waits for the
database to answer again.

Who scraped (`scraper_identity`) is the credential plus the client's
address, for the windows kept per scraper (`api.wire.queue_metrics.QueuePeaks`).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime

from channels.db import database_sync_to_async
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from api.store.exceptions import DATABASE_DOWN_RETRY_SECONDS, DATABASE_UNREACHABLE
from api.store.roles import role_of, token_from_header
from api.store.services import api_token_authenticate

__all__ = ["SCRAPE_GRACE_SECONDS", "RecentScrapers", "scrape_refusal", "scraper_identity"]

# Long enough to cover a database failover or restart; short enough that a
# token revoked just before an outage is not honoured for long.
SCRAPE_GRACE_SECONDS = 900.0

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="metrics"'}

log = logging.getLogger(__name__)


def _answer(status: int, text: str, headers: dict[str, str] | None = None) -> HttpResponse:
    return HttpResponse(text + "\n", status=status, content_type="text/plain", headers=headers)


class RecentScrapers:
    """Tokens the database accepted for a scrape lately, by their SHA-256, with
    the instant each expires at (None: never).

    Bounded (`size`, the least recently accepted dropped first): a scrape
    config holds a token or two, and the plaintext is never kept.
    """

    def __init__(
        self,
        grace: float = SCRAPE_GRACE_SECONDS,
        size: int = 64,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = timezone.now,
    ) -> None:
        self.grace = grace
        self._size = size
        self._clock = clock
        self._wall = wall
        self._accepted: OrderedDict[bytes, tuple[float, datetime | None]] = OrderedDict()

    def accepted(self, plaintext: str, expires_at: datetime | None = None) -> None:
        key = _digest(plaintext)
        self._accepted[key] = (self._clock(), expires_at)
        self._accepted.move_to_end(key)
        while len(self._accepted) > self._size:
            self._accepted.popitem(last=False)

    def refused(self, plaintext: str) -> None:
        self._accepted.pop(_digest(plaintext), None)

    def still_trusted(self, plaintext: str) -> bool:
        """Accepted within the grace period and not expired since (asked only
        while the database is down).

        Unlike a revocation, an expiry needs no database to be known: a
        token issued to run out at noon must not scrape on after noon
        because the database happened to be down then.
        """
        found = self._accepted.get(_digest(plaintext))
        if found is None:
            return False
        at, expires_at = found
        if expires_at is not None and self._wall() >= expires_at:
            return False
        return self._clock() - at <= self.grace


def _digest(plaintext: str) -> bytes:
    return hashlib.sha256(plaintext.encode()).digest()


RECENT = RecentScrapers()


async def scrape_refusal(request: HttpRequest) -> HttpResponse | None:
    """None if this request may scrape; otherwise the answer saying why not."""
    try:
        return await _refusal(request)
    except DATABASE_UNREACHABLE as exc:
        plaintext = token_from_header(request.headers.get("Authorization", ""))
        if plaintext is not None and RECENT.still_trusted(plaintext):
            log.warning(
                "/metrics: the database did not answer (%s); a token it accepted in the "
                "last %.0f s scrapes meanwhile",
                exc,
                RECENT.grace,
            )
            return None
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
            RECENT.refused(plaintext)
            return _answer(401, "invalid, revoked or expired token", _CHALLENGE)
        if role_of(token) is None:
            RECENT.refused(plaintext)
            return _answer(403, "this needs a token with the viewer or editor role")
        RECENT.accepted(plaintext, token.expires_at)
        return None
    # A session cookie is read from the database too.
    user = await request.auser()
    if not user.is_authenticated:
        return _answer(401, "login or a viewer token required", _CHALLENGE)
    # As on the pages: an account without a role (never given one, or its
    # role taken away) reads nothing, the tenants and queues here included.
    if await database_sync_to_async(role_of)(user) is None:
        return _answer(403, "this needs the viewer or editor role")
    return None


async def scraper_identity(request: HttpRequest, checked: bool) -> str:
    """Who is scraping: the client's address, and the credential `scrape_refusal` let in.

    The address (REMOTE_ADDR, as Daphne gives it) tells two Prometheus
    servers sharing one token apart. Without `checked` (open access) only
    the address counts: an unchecked header would let one client pose as
    any number of scrapers and push real ones out of the bounded memory.
    With it, the token's digest (the plaintext is never kept; read without
    the database, so a scrape during an outage keeps its identity) or the
    signed-in user (`auser` is cached on the request by then).
    """
    address = request.META.get("REMOTE_ADDR") or ""
    if not checked:
        return f"@{address}"
    plaintext = token_from_header(request.headers.get("Authorization", ""))
    if plaintext is not None:
        return f"token:{_digest(plaintext).hex()[:16]}@{address}"
    user = await request.auser()
    return f"user:{user.pk}@{address}"
