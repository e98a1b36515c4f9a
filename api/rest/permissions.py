"""Permissions of the REST API beyond the default `api.rest.auth.RolePermission`.

The default (viewer reads, editor writes) is set in `REST_FRAMEWORK`; this
module only adds the case where a POST is a read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework import permissions

from api.store.roles import role_of

if TYPE_CHECKING:
    from rest_framework.request import Request
    from rest_framework.views import APIView

__all__ = ["AnyRole"]


class AnyRole(permissions.BasePermission):
    """Any REST role, whatever the method: for POSTs that change nothing (explain)."""

    message = "this needs the viewer or editor role"

    def has_permission(self, request: Request, view: APIView) -> bool:
        return role_of(request.user) is not None
