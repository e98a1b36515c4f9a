"""OpenAPI extensions: how the schema describes our token authentication.

Imported by `api.rest.views` so it is registered before drf-spectacular walks
the views.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension

__all__ = ["BearerTokenScheme"]


class BearerTokenScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    """`Authorization: Bearer <token>` (the `Token` keyword is accepted too)."""

    target_class = "api.rest.auth.BearerTokenAuthentication"
    name = "bearerToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "an API token from `manage.py issue_token` (viewer or editor role)",
        }
