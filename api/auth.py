"""Who may do what: API tokens for DRF, and the viewer/editor role of anyone.

People get roles from the Django groups "viewer" and "editor" (superusers
are editors); tokens carry their role themselves. Frontend and querier
tokens are for the scheduler's wire protocols and have no REST role.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from rest_framework import authentication, exceptions, permissions

from api.models import ApiToken
from api.services import api_token_authenticate

if TYPE_CHECKING:
    # DRF's views module loads the authentication classes named in settings
    # (this module) at import time, so importing it here would be circular.
    from rest_framework.request import Request
    from rest_framework.views import APIView

__all__ = [
    "EDITOR",
    "VIEWER",
    "BearerTokenAuthentication",
    "Role",
    "RolePermission",
    "TokenUser",
    "role_of",
    "token_from_header",
]

Role = Literal["viewer", "editor"]
VIEWER: Role = "viewer"
EDITOR: Role = "editor"
_KEYWORDS = ("bearer", "token")


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
    if len(parts) != 2 or parts[0].lower() not in _KEYWORDS:
        return None
    return parts[1]


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """DRF authentication by API token; `request.auth` is the `ApiToken`."""

    def authenticate(self, request: Request) -> tuple[TokenUser, ApiToken] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header or header.split()[0].lower() not in _KEYWORDS:
            return None
        plaintext = token_from_header(header)
        if plaintext is None:
            raise exceptions.AuthenticationFailed("malformed Authorization header")
        token = api_token_authenticate(plaintext)
        if token is None:
            raise exceptions.AuthenticationFailed("invalid or revoked token")
        return TokenUser(token), token

    def authenticate_header(self, request: Request) -> str:
        # Makes DRF answer 401 (with this challenge) rather than 403.
        return 'Bearer realm="api"'


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


class RolePermission(permissions.BasePermission):
    """Reading needs the viewer or editor role; any write needs editor."""

    message = "this needs the editor role"

    def has_permission(self, request: Request, view: APIView) -> bool:
        role = role_of(request.user)
        if request.method in permissions.SAFE_METHODS:
            return role is not None
        return role == EDITOR
