"""API tokens: issue, authenticate, revoke (re-exported by `api.store.services`).

Only a token's SHA-256 is stored, so a database leak gives no usable
token; the plaintext exists once, in the answer to `api_token_issue`.
A revocation is published after commit (`config_events`), so the running
scheduler closes the sockets that authenticated with the token.

A token may carry an expiry (`expires_at`, none by default): from that
instant it is refused as a revoked one is. Nothing announces an expiry, so
the sockets open with it are found by the runtime host's reconcile, which
asks `api_token_ids_by_state` every CONFIG_RECONCILE_SECONDS.
"""

from __future__ import annotations

import hashlib
import secrets
import unicodedata
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from django.db import transaction
from django.utils import timezone

from api.store import config_events
from api.store.exceptions import NotFound
from api.store.models import ApiToken

__all__ = [
    "TokenExpiryError",
    "TokenIdStates",
    "api_token_authenticate",
    "api_token_expiry_check",
    "api_token_ids_by_state",
    "api_token_issue",
    "api_token_revoke",
    "token_name_error",
    "unprintable_character",
    "valid_utf8",
]


def _token_hash(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode()).hexdigest()


class TokenExpiryError(ValueError):
    """The expiry asked for cannot be: no time zone, not in the future, out of range."""


def api_token_expiry_check(expires_at: datetime) -> datetime:
    """`expires_at` in UTC if a token may be issued with it, else `TokenExpiryError`."""
    if timezone.is_naive(expires_at):
        # Whose midnight? Guessing would shift the expiry by hours.
        raise TokenExpiryError(
            f"{expires_at.isoformat()} has no time zone; add one, e.g. 2027-01-31T00:00:00Z"
            " or 2027-01-31T00:00:00+02:00"
        )
    try:
        expires_at = expires_at.astimezone(UTC)
    except OverflowError as exc:
        raise TokenExpiryError(
            f"{expires_at.isoformat()} is out of range (years 1 to 9999, in UTC)"
        ) from exc
    now = timezone.now()
    if expires_at <= now:
        shown = now.isoformat(timespec="seconds")
        raise TokenExpiryError(
            f"{expires_at.isoformat()} is not in the future (now {shown}); "
            "leave the expiry out for a token that never expires"
        )
    return expires_at


def token_name_error(name: str) -> str | None:
    """Why `name` cannot name a token, or None: the one check the command and the admin share."""
    limit = ApiToken._meta.get_field("name").max_length
    if not valid_utf8(name):
        # Bytes a terminal or file gave in another encoding: the database
        # driver failed on them with a codec's message.
        return "not valid UTF-8"
    if not name.strip() or len(name) > limit:
        # PostgreSQL refuses a longer one with a DataError (SQLite would keep it).
        return f"a token name is 1 to {limit} characters, not blank"
    unprintable = unprintable_character(name)
    if unprintable is not None:
        # The token listings, the admin and the log lines that quote a name
        # show it as it is.
        return (
            "a token name may hold no control characters, line or paragraph separators "
            f"or bidi controls ({unprintable})"
        )
    return None


def api_token_issue(
    *, name: str, role: str, expires_at: datetime | None = None
) -> tuple[ApiToken, str]:
    """A new token and its plaintext, which is never stored and never shown again.

    Without `expires_at` the token works until revoked.
    """
    if role not in ApiToken.Role.values:
        raise ValueError(f"unknown role {role!r}; allowed: {', '.join(ApiToken.Role.values)}")
    refused = token_name_error(name)
    if refused is not None:
        raise ValueError(refused)
    if expires_at is not None:
        expires_at = api_token_expiry_check(expires_at)
    plaintext = "qi_" + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        name=name,
        role=role,
        token_hash=_token_hash(plaintext),
        prefix=plaintext[:8],
        expires_at=expires_at,
    )
    return token, plaintext


# Refused in text shown to operators as it is (token names, the demo login
# line): control characters (Cc: NUL, tab, line breaks, ESC) and line and
# paragraph separators (Zl, Zp) split, recolour or garble the line quoting
# them, and the bidi controls, though only format characters (Cf), reorder
# how the rest of that line reads (Trojan Source), so an operator would read
# something other than what the text holds. The other format characters are
# allowed: zero-width joiners and non-joiners belong to the spelling of some
# scripts and to emoji.
_UNPRINTABLE_CATEGORIES = frozenset({"Cc", "Zl", "Zp"})
_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


def valid_utf8(text: str) -> bool:
    """Whether `text` is text at all: bytes that are not UTF-8 reach a command's
    arguments and environment as lone surrogates (surrogate escapes), which
    no database, hash or page can take."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def unprintable_character(text: str) -> str | None:
    """The first character of `text` refused in text shown to operators, as
    "U+XXXX at character N" (never the text itself, which may be a
    password), or None."""
    for position, character in enumerate(text, start=1):
        if character in _BIDI_CONTROLS or (
            unicodedata.category(character) in _UNPRINTABLE_CATEGORIES
        ):
            return f"U+{ord(character):04X} at character {position}"
    return None


# Recording every use would turn each authenticated read into a write.
_LAST_USED_RESOLUTION = timedelta(minutes=1)


def api_token_authenticate(token: str) -> ApiToken | None:
    """The live token with this plaintext, or None (unknown, revoked or expired)."""
    if not token:
        return None
    now = timezone.now()
    found = ApiToken.objects.live(now).filter(token_hash=_token_hash(token)).first()
    if found is None:
        return None
    if found.last_used_at is None or now - found.last_used_at >= _LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=found.pk).update(last_used_at=now)
        found.last_used_at = now
    return found


def api_token_revoke(*, token_id: int) -> ApiToken:
    """Revoke a token for good; revoking twice is harmless."""
    try:
        token = ApiToken.objects.get(pk=token_id)
    except ApiToken.DoesNotExist as exc:
        raise NotFound(f"no token {token_id}") from exc
    if not token.revoked:
        token.revoked = True
        token.save(update_fields=["revoked"])
    # Also when it was revoked already: a socket that slipped through a
    # lost notice is closed now. After commit, as config changes are.
    token_id = token.pk
    transaction.on_commit(lambda: config_events.publish_token_revoked(token_id))
    return token


class TokenIdStates(NamedTuple):
    """Which of some token ids are live and which ran out; the rest are revoked or gone."""

    live: set[int]
    expired: set[int]


def api_token_ids_by_state(token_ids: Iterable[int]) -> TokenIdStates:
    """`token_ids` sorted by state at one instant, in one query.

    The runtime host's token re-check asks this every
    CONFIG_RECONCILE_SECONDS for every token with an open socket: one read
    tells it which sockets to close and whether to say "expired" or
    "revoked" (an operator told "revoked" about a token that merely ran out
    goes looking for who revoked it).
    """
    ids = list(token_ids)
    states = TokenIdStates(live=set(), expired=set())
    if not ids:
        return states
    now = timezone.now()
    # `state` decides as the `live` and `expired` querysets do (a test holds
    # them to agreeing); a revoked token is in neither set.
    for token in ApiToken.objects.filter(pk__in=ids).only("revoked", "expires_at"):
        state = token.state(now)
        if state == "live":
            states.live.add(token.pk)
        elif state == "expired":
            states.expired.add(token.pk)
    return states
