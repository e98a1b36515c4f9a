"""Who may do what: the viewer/editor role of a person or a token.

People get roles from the Django groups "viewer" and "editor" (superusers
are editors); tokens carry their role themselves. Frontend and querier
tokens are for the scheduler's wire protocols and have no REST role.
"""

from __future__ import annotations

from typing import Any, Literal

from api.store.models import ApiToken

__all__ = [
    "EDITOR",
    "VIEWER",
    "KEYWORDS",
    "Role",
    "TokenUser",
    "role_of",
    "token_from_header",
]

Role = Literal["viewer", "editor"]
VIEWER: Role = "viewer"
EDITOR: Role = "editor"
# The Authorization schemes a token may come with.
KEYWORDS = ("bearer", "token")


class TokenUser:
    """The `request.user` of a token-authenticated request.

    Not a database user: it exists so permission checks and revisions can
    treat people and tokens alike (revisions record `token:<name>`).
    """

    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_staff = False
    is_superuser = False
    pk = None
    id = None

    def __init__(self, token: ApiToken) -> None:
        self.token = token
        self.username = f"token:{token.name}"

    def get_username(self) -> str:
        return self.username

    def __str__(self) -> str:
        return self.username


def token_from_header(value: str) -> str | None:
    """The token of an `Authorization: Bearer <t>` or `Token <t>` header value."""
    parts = value.split()
    if len(parts) != 2 or parts[0].lower() not in KEYWORDS:
        return None
    return parts[1]


def role_of(subject: Any) -> Role | None:
    """The REST role of a user, a `TokenUser` or an `ApiToken`; None if it has none."""
    if isinstance(subject, TokenUser):
        subject = subject.token
    if isinstance(subject, ApiToken):
        if subject.revoked:
            return None
        if subject.role == ApiToken.Role.EDITOR:
            return EDITOR
        return VIEWER if subject.role == ApiToken.Role.VIEWER else None
    if subject is None or not getattr(subject, "is_authenticated", False):
        return None
    if not getattr(subject, "is_active", False):
        return None
    if subject.is_superuser:
        return EDITOR
    groups = set(subject.groups.values_list("name", flat=True))
    if EDITOR in groups:
        return EDITOR
    return VIEWER if VIEWER in groups else None
