"""DRF's side of who may do what: token authentication and the default permission.

Roles themselves (`role_of`, viewer/editor) live in `api.store.roles`, which
the websocket consumers and the dashboard use too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework import authentication, exceptions, permissions

from api.store.models import ApiToken
from api.store.roles import EDITOR, KEYWORDS, TokenUser, role_of, token_from_header
from api.store.services import api_token_authenticate

if TYPE_CHECKING:
    # DRF's views module loads the authentication classes named in settings
    # (this module) at import time, so importing it here would be circular.
    from rest_framework.request import Request
    from rest_framework.views import APIView

__all__ = ["BearerTokenAuthentication", "RolePermission"]


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """DRF authentication by API token; `request.auth` is the `ApiToken`."""

    def authenticate(self, request: Request) -> tuple[TokenUser, ApiToken] | None:
        # `[:1]`: a header of whitespace alone (Unicode's too: "\xa0")
        # splits into nothing, and indexing it was a 500 anyone could cause.
        header = request.META.get("HTTP_AUTHORIZATION", "")
        scheme = header.split()[:1]
        if not scheme or scheme[0].lower() not in KEYWORDS:
            return None
        plaintext = token_from_header(header)
        if plaintext is None:
            raise exceptions.AuthenticationFailed("malformed Authorization header")
        token = api_token_authenticate(plaintext)
        if token is None:
            raise exceptions.AuthenticationFailed("invalid, revoked or expired token")
        return TokenUser(token), token

    def authenticate_header(self, request: Request) -> str:
        # Makes DRF answer 401 (with this challenge) rather than 403.
        return 'Bearer realm="api"'


class RolePermission(permissions.BasePermission):
    """Reading needs the viewer or editor role; any write needs editor."""

    message = "this needs the editor role"

    def has_permission(self, request: Request, view: APIView) -> bool:
        role = role_of(request.user)
        if request.method in permissions.SAFE_METHODS:
            # A frontend or querier token reading: "needs the editor role"
            # sent its owner for a bigger token than a read takes.
            self.message = "this needs the viewer or editor role"
            return role is not None
        return role == EDITOR
