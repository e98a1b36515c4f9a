"""Top-level URL routing: admin, health, and the two apps' own URL files.

Errors no view answered (an unknown path, an exception that escaped) are
JSON under /api/ and the site's pages elsewhere.
"""

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from django.views import defaults

from api.rest.errors import api_bad_request, api_not_found, api_server_error

__all__ = ["handler400", "handler404", "handler500", "urlpatterns"]


def handler400(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith("/api/"):
        return api_bad_request(request, exception)
    return defaults.bad_request(request, exception)


def handler404(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith("/api/"):
        return api_not_found(request)
    return defaults.page_not_found(request, exception)


def handler500(request: HttpRequest) -> HttpResponse:
    if request.path.startswith("/api/"):
        return api_server_error(request)
    return defaults.server_error(request)


urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("api.urls")),
    path("", include("dashboard.urls")),
]
