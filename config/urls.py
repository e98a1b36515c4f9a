"""Top-level URL routing: admin, health, and the two apps' own URL files.

Errors no view answered (an unknown path, an exception that escaped) are
JSON under /api/ and the site's pages elsewhere. A path under /api/ that
names no endpoint is answered by the last route, not by `handler404`: with
`DEBUG` on (as under `make demo`) Django answers an unmatched path with its
HTML debug page and never calls `handler404`, and an API client cannot read
that as an error.
"""

from django.conf import settings
from django.contrib import admin
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.template import loader
from django.urls import include, path, re_path
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt

from api.middleware import UNKNOWN_API_PATH
from api.rest.errors import api_bad_request, api_not_found, api_server_error

__all__ = ["handler400", "handler404", "handler500", "urlpatterns"]


def handler400(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith("/api/"):
        return api_bad_request(request, exception)
    if isinstance(exception, RequestDataTooBig | TooManyFieldsSent):
        # A form past the post limits (far above any valid tenant's): say
        # so, and that Back keeps the draft, rather than "could not read".
        reason = (
            f"The form sent more than the server reads (at most "
            f"{settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,} fields and "
            f"{settings.DATA_UPLOAD_MAX_MEMORY_SIZE // (1024 * 1024)} MiB); nothing was "
            "saved. Your browser's Back returns to the form as you left it."
        )
        page = loader.get_template("400.html").render({"reason": reason})
        return HttpResponseBadRequest(page)
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
    # Last: every path under /api/ no route above matched, for every method.
    # CSRF-exempt so a signed-in browser's POST gets this 404, not a CSRF 403
    # page: the answer changes nothing. ApiSlashMiddleware sets it aside when
    # it asks whether a path names an endpoint.
    re_path(r"^api/", csrf_exempt(api_not_found), name=UNKNOWN_API_PATH),
]
