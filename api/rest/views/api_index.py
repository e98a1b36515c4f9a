"""`/api/v1/` itself: where the API's documents and endpoints are.

A client (or a person with a token and `curl`) that starts at the API's
root learns the address of the OpenAPI document, its two readable forms and
each endpoint that takes no ID, instead of a 404. It needs a role, as the
schema does: the index says no more than the schema, so it is shown to no
one the schema is not. Addresses are root-relative paths from the URL conf,
so they stay right under a script prefix and say nothing about the Host
header a client sent.
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.settings import spectacular_settings
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from api.rest.views.base import ApiView, errors

__all__ = ["ApiIndexView"]

DOCS = {"schema": "schema", "swagger_ui": "swagger-ui", "redoc": "redoc"}
# Each endpoint whose address holds no ID, by the name the index gives it
# (the URL names of `api.rest.urls`, with underscores as in JSON fields).
ENDPOINTS = {
    "tenants": "tenant-list",
    "settings": "settings",
    "explain": "explain",
    "queue": "queue",
    "queue_requests": "queue-requests",
    "queue_usage": "queue-usage",
    "queue_cancel": "queue-cancel",
    "queriers": "queriers",
    "runtime_config": "runtime-config",
    "revisions": "revision-list",
    "revisions_compare": "revision-compare",
    "simulate": "simulate",
    "recording": "recording",
}


def _paths(component: str, names: dict[str, str], help_text: str) -> serializers.Serializer:
    """The schema of one block of the index: a path for each of `names`."""
    return inline_serializer(
        component, {key: serializers.CharField(help_text=help_text) for key in names}
    )


class ApiIndexView(ApiView):
    """The API's title and version, its documents, and its endpoints that take no ID."""

    @extend_schema(
        operation_id="index_retrieve",
        summary="API index",
        responses={
            200: inline_serializer(
                "ApiIndex",
                {
                    "title": serializers.CharField(),
                    "version": serializers.CharField(),
                    "docs": _paths("ApiIndexDocs", DOCS, "the path of the document or page"),
                    "endpoints": _paths("ApiIndexEndpoints", ENDPOINTS, "the endpoint's path"),
                },
            ),
            **errors(),
        },
    )
    def get(self, request: Request) -> Response:
        return Response(
            {
                "title": spectacular_settings.TITLE,
                "version": spectacular_settings.VERSION,
                "docs": {key: reverse(f"api-v1:{name}") for key, name in DOCS.items()},
                "endpoints": {key: reverse(f"api-v1:{name}") for key, name in ENDPOINTS.items()},
            }
        )
