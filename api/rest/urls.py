"""The REST API's routes, mounted under `/api/v1/` by `api.urls`."""

from typing import Any

from django.urls import path, re_path
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerSplitView,
)
from rest_framework import exceptions

from api.rest import views
from api.rest.views.api_index import ApiIndexView
from api.rest.views.base import (
    FormatChecked,
    JsonErrors,
    MethodsBeforeRoles,
    refuse_repeated_params,
)
from api.rest.views.queue_requests import (
    QueueCancelView,
    QueueRequestCancelView,
    QueueRequestDetailView,
    QueueRequestListView,
)
from api.rest.views.queue_usage import QueueUsageView
from api.rest.views.simulate import RecordingView, SimulateRunView, SimulateView

__all__ = ["urlpatterns"]


class SchemaView(MethodsBeforeRoles, JsonErrors, FormatChecked, SpectacularAPIView):
    """The OpenAPI document; a `?format=` it does not write is a 400, as on every endpoint.

    Its errors (401, 403, 400) are JSON, not the document's YAML (JsonErrors).
    """

    def initial(self, request: Any, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        refuse_repeated_params(request)
        self.refuse_bad_format(request)
        # drf-spectacular reads both: `?version=999` was written into the
        # document's own version, `?lang=xx` ignored.
        problems = {}
        if "version" in request.query_params:
            problems["version"] = ["the API has one version, v1: leave version out"]
        if request.query_params.get("lang", "en").lower() not in ("en", "en-us"):
            problems["lang"] = ["the document is written in English only: en, or leave lang out"]
        if problems:
            raise exceptions.ValidationError(problems)


class SwaggerView(MethodsBeforeRoles, SpectacularSwaggerSplitView):
    """Swagger UI's page (HTML for a browser)."""


class RedocView(MethodsBeforeRoles, SpectacularRedocView):
    """ReDoc's page (HTML for a browser)."""


app_name = "api-v1"

# IDs are matched loosely and judged by the views, so a malformed one gets the
# API's JSON 400/404 rather than Django's HTML 404 (a tenant ID with "/" is
# refused by tenant ID validation).
urlpatterns = [
    path("", ApiIndexView.as_view(), name="index"),
    path("tenants/", views.TenantListView.as_view(), name="tenant-list"),
    re_path(
        r"^tenants/(?P<tenant_id>[^/]+)/yaml/\Z",
        views.TenantYamlView.as_view(),
        name="tenant-yaml",
    ),
    re_path(
        r"^tenants/(?P<tenant_id>[^/]+)/rule-stats/\Z",
        views.TenantRuleStatsView.as_view(),
        name="tenant-rule-stats",
    ),
    re_path(
        r"^tenants/(?P<tenant_id>[^/]+)/dry-run/\Z",
        views.TenantDryRunView.as_view(),
        name="tenant-dry-run",
    ),
    re_path(
        r"^tenants/(?P<tenant_id>[\s\S]+)/\Z",
        views.TenantDetailView.as_view(),
        name="tenant-detail",
    ),
    path("settings/", views.SettingsView.as_view(), name="settings"),
    path("explain/", views.ExplainView.as_view(), name="explain"),
    path("queue/", views.QueueView.as_view(), name="queue"),
    path("queue/requests/", QueueRequestListView.as_view(), name="queue-requests"),
    path("queue/usage/", QueueUsageView.as_view(), name="queue-usage"),
    re_path(
        r"^queue/requests/(?P<request_id>[\s\S]+)/cancel/\Z",
        QueueRequestCancelView.as_view(),
        name="queue-request-cancel",
    ),
    re_path(
        r"^queue/requests/(?P<request_id>[\s\S]+)/\Z",
        QueueRequestDetailView.as_view(),
        name="queue-request-detail",
    ),
    path("queue/cancel/", QueueCancelView.as_view(), name="queue-cancel"),
    path("queriers/", views.QueriersView.as_view(), name="queriers"),
    path("runtime-config/", views.RuntimeConfigView.as_view(), name="runtime-config"),
    path("revisions/", views.RevisionListView.as_view(), name="revision-list"),
    path("revisions/compare/", views.RevisionCompareView.as_view(), name="revision-compare"),
    re_path(
        r"^revisions/(?P<revision_id>[^/]+)/\Z",
        views.RevisionDetailView.as_view(),
        name="revision-detail",
    ),
    re_path(
        r"^revisions/(?P<revision_id>[^/]+)/rollback/\Z",
        views.RevisionRollbackView.as_view(),
        name="revision-rollback",
    ),
    path("simulate/", SimulateView.as_view(), name="simulate"),
    path("recording/", RecordingView.as_view(), name="recording"),
    re_path(r"^simulate/(?P<run_id>[^/]+)/\Z", SimulateRunView.as_view(), name="simulate-run"),
    path("schema/", SchemaView.as_view(), name="schema"),
    path(
        "schema/swagger-ui/",
        # Its start script served as a file (`?script=`), as the pages'
        # Content-Security-Policy allows no inline script.
        SwaggerView.as_view(url_name="api-v1:schema"),
        name="swagger-ui",
    ),
    path("schema/redoc/", RedocView.as_view(url_name="api-v1:schema"), name="redoc"),
]
