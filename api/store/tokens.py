"""API tokens: issue, authenticate, revoke (re-exported by `api.store.services`).

Only a token's SHA-256 is stored, so a database leak gives no usable
token; the plaintext exists once, in the answer to `api_token_issue`.
A revocation is published after commit (`config_events`), so the running
scheduler closes the sockets that authenticated with the token.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from api.store import config_events
from api.store.exceptions import NotFound
from api.store.models import ApiToken

__all__ = [
    "api_token_authenticate",
    "api_token_ids_live",
    "api_token_issue",
    "api_token_revoke",
]


def _token_hash(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode()).hexdigest()


def api_token_issue(*, name: str, role: str) -> tuple[ApiToken, str]:
    """A new token and its plaintext, which is never stored and never shown again."""
    if role not in ApiToken.Role.values:
        raise ValueError(f"unknown role {role!r}; allowed: {', '.join(ApiToken.Role.values)}")
    limit = ApiToken._meta.get_field("name").max_length
    if not name.strip() or len(name) > limit or "\x00" in name:
        # PostgreSQL refuses a longer one with a DataError (SQLite would keep it).
        raise ValueError(f"a token name is 1 to {limit} characters, with no NUL")
    plaintext = "qi_" + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        name=name, role=role, token_hash=_token_hash(plaintext), prefix=plaintext[:8]
    )
    return token, plaintext


# Recording every use would turn each authenticated read into a write.
_LAST_USED_RESOLUTION = timedelta(minutes=1)


def api_token_authenticate(token: str) -> ApiToken | None:
    """The live token with this plaintext, or None (unknown or revoked)."""
    if not token:
        return None
    found = ApiToken.objects.filter(token_hash=_token_hash(token), revoked=False).first()
    if found is None:
        return None
    now = timezone.now()
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


def api_token_ids_live(token_ids: Iterable[int]) -> set[int]:
    """Those of `token_ids` that still exist and are not revoked."""
    ids = list(token_ids)
    if not ids:
        return set()
    return set(ApiToken.objects.filter(pk__in=ids, revoked=False).values_list("pk", flat=True))
