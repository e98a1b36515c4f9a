"""`tenants/` and `tenants/{tenant_id}/`: one tenant's Cortex override block.

The body of GET, PUT and PATCH is the block itself (as in a runtime-config
file's `overrides.<tenant>`), so a client can GET, edit and PUT it back with
the ETag as If-Match. PATCH is a JSON merge patch (RFC 7386) of the block.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, status
from rest_framework.request import Request
from rest_framework.response import Response

from api.rest.content import MergePatchJSONParser
from api.rest.errors import etag_for
from api.rest.query_params import StrictLimitOffsetPagination
from api.rest.serializers import TenantConfigSerializer, TenantListItemSerializer
from api.rest.views.base import (
    IF_MATCH,
    IF_MATCH_REQUIRED,
    IF_NONE_MATCH,
    ApiView,
    body_of,
    errors,
)
from api.rest.views.conditional import (
    NamesConflicts,
    expected_for_existing,
    expected_for_put,
    not_modified,
)
from api.store import selectors, services
from api.store.import_plan import validate_tenant
from api.store.models import Tenant

__all__ = ["TenantDetailView", "TenantListView"]


class TenantPagination(StrictLimitOffsetPagination):
    default_limit = 100
    max_limit = 1000


def _current_version(tenant_id: str) -> int | None:
    return Tenant.objects.filter(tenant_id=tenant_id).values_list("version", flat=True).first()


def _block(tenant: Tenant, code: int = status.HTTP_200_OK) -> Response:
    response = Response(tenant.config, status=code)
    response["ETag"] = etag_for(tenant.version)
    return response


class TenantListView(ApiView):
    """Tenants by ID, paged; `search` keeps IDs containing it (any case)."""

    # Also tells the schema generator that the list is paged.
    pagination_class = TenantPagination

    @extend_schema(
        operation_id="tenants_list",
        summary="List tenants",
        parameters=[OpenApiParameter("search", OpenApiTypes.STR, description="ID substring")],
        responses={200: TenantListItemSerializer(many=True), **errors(400)},
    )
    def get(self, request: Request) -> Response:
        paginator = self.pagination_class()
        tenants = selectors.tenant_list(search=request.query_params.get("search"))
        page = paginator.paginate_queryset(tenants, request, view=self)
        rows = TenantListItemSerializer(page, many=True).data
        return paginator.get_paginated_response(rows)


class TenantDetailView(NamesConflicts, ApiView):
    """One tenant: GET, PUT (create or replace), PATCH (merge), DELETE."""

    conflict_subject = "tenant {tenant_id!r}"
    conflict_next = "GET it, reapply your change and send its ETag as If-Match"

    @extend_schema(
        operation_id="tenants_retrieve",
        summary="Get a tenant",
        parameters=[IF_NONE_MATCH],
        responses={
            200: TenantConfigSerializer,
            304: OpenApiResponse(description="If-None-Match names the current version"),
            **errors(404),
        },
    )
    def get(self, request: Request, tenant_id: str) -> Response:
        tenant = selectors.tenant_get(tenant_id=tenant_id)
        if not_modified(request, tenant.version):
            response = Response(status=status.HTTP_304_NOT_MODIFIED)
            response["ETag"] = etag_for(tenant.version)
            return response
        return _block(tenant)

    @extend_schema(
        operation_id="tenants_put",
        summary="Create or replace a tenant",
        parameters=[IF_MATCH, IF_NONE_MATCH],
        request=TenantConfigSerializer,
        responses={
            200: TenantConfigSerializer,
            201: TenantConfigSerializer,
            **errors(400, 412, 413, 415, 428),
        },
    )
    def put(self, request: Request, tenant_id: str) -> Response:
        # The body first: a bad block is a 400 whatever the preconditions say.
        block = body_of(request, "the tenant's whole block as JSON ({} for no limits)")
        validate_tenant(tenant_id, block)
        current = _current_version(tenant_id)
        tenant = services.tenant_put(
            tenant_id=tenant_id,
            config=block,
            expected_version=expected_for_put(request, current),
            author=request.user,
            source=self.source,
        )
        return _block(tenant, status.HTTP_201_CREATED if current is None else status.HTTP_200_OK)

    def get_parsers(self) -> list[Any]:
        # RFC 7386's own media type too: the PATCH body is a JSON merge patch.
        # (The schema generator asks with no request; PATCH's schema names both.)
        if getattr(self.request, "method", None) == "PATCH":
            return [*super().get_parsers(), MergePatchJSONParser()]
        return super().get_parsers()

    @extend_schema(
        operation_id="tenants_patch",
        summary="Change a tenant (merge patch)",
        parameters=[IF_MATCH_REQUIRED],
        request={
            "application/json": TenantConfigSerializer,
            "application/merge-patch+json": TenantConfigSerializer,
        },
        description="JSON merge patch (RFC 7386): objects merge, null removes a field.",
        responses={200: TenantConfigSerializer, **errors(400, 404, 412, 413, 415, 428)},
    )
    def patch(self, request: Request, tenant_id: str) -> Response:
        tenant = selectors.tenant_get(tenant_id=tenant_id)
        changes: Any = body_of(request, "a JSON merge patch of the tenant's block")
        services.patched_tenant(tenant_id, tenant.config, changes)
        saved = services.tenant_patch(
            tenant_id=tenant_id,
            changes=changes,
            expected_version=expected_for_existing(request, tenant.version),
            author=request.user,
            source=self.source,
        )
        return _block(saved)

    @extend_schema(
        operation_id="tenants_destroy",
        summary="Delete a tenant",
        parameters=[IF_MATCH_REQUIRED],
        responses={204: None, **errors(404, 412, 428)},
    )
    def delete(self, request: Request, tenant_id: str) -> Response:
        # A body here is a mistake (a PUT's, sent to the wrong method): it
        # used to go unread and the tenant was deleted anyway.
        if request.stream is not None and request.data not in ({}, None):
            raise exceptions.ValidationError(
                {"non_field_errors": ["a delete takes no body (or {}); nothing was deleted"]}
            )
        tenant = selectors.tenant_get(tenant_id=tenant_id)
        services.tenant_delete(
            tenant_id=tenant_id,
            expected_version=expected_for_existing(request, tenant.version),
            author=request.user,
            source=self.source,
        )
        return Response(status=status.HTTP_204_NO_CONTENT)
