"""Request guards every HTTP view relies on (listed in `settings.MIDDLEWARE`).

`RefuseNulMiddleware`: PostgreSQL cannot hold a NUL character in a text
value, and psycopg refuses to send one, so a `%00` in a URL path (a tenant
ID) or a query parameter (`?search=`, `?key=`, `?kind=`) that reached a
query answered 500 there while SQLite merely found nothing. No stored value
can contain NUL (every write refuses it: JSON and YAML bodies, forms), so
such a request can only ever miss; it is refused up front with 400, the same
on every database and for every view, present or future. The REST API gets
its JSON error shape, pages the site's 400 page.

`ApiSlashMiddleware`: every API URL ends with a slash. Django's
`APPEND_SLASH` answered one without it by a 301 to HTML with an empty body,
sent before any authentication, and with `DEBUG` on a write (POST, PUT,
PATCH) raised a RuntimeError (an HTML 500 debug page), as a redirect would
lose the body. Under /api/ such a URL is a JSON 404 naming the URL with the
slash instead, for every method: a client is told its mistake and never
resends its write somewhere else. Pages keep `APPEND_SLASH`. Every other
path under /api/ is answered by the URL conf's last route, named
`UNKNOWN_API_PATH` (config/urls.py), so its 404 is JSON with `DEBUG` on too
(Django's debug page bypasses `handler404`); that route matches any path,
so this middleware asks whether a path names an endpoint with it set aside.

`ContentSecurityPolicyMiddleware`: every response says, in
`Content-Security-Policy`, that its page runs only scripts, styles and
connections of this site and may not be framed (`settings.CONTENT_SECURITY_POLICY`),
so text that got into a page unescaped still could not run.

`PrivateCacheMiddleware`: every page, API answer and scrape holds what one
signed-in account may see (tenants' queries, their limits, tokens' names),
so none may be kept by a shared cache (a corporate proxy, a CDN in front of
the server), and a browser must ask again before it shows one from its
cache: `Cache-Control: private, no-cache` unless the view set its own.
`no-cache` rather than `no-store` keeps the browser's back/forward cache,
which Explain's Back relies on. Static files do not pass through here
(Daphne's static handler serves them before any middleware).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import Resolver404, resolve
from django.views.defaults import bad_request

__all__ = [
    "ApiSlashMiddleware",
    "ContentSecurityPolicyMiddleware",
    "PrivateCacheMiddleware",
    "RefuseNulMiddleware",
    "RequestMiddleware",
    "UNKNOWN_API_PATH",
]

# The URL name of the catch-all route for paths under /api/ that name no endpoint.
UNKNOWN_API_PATH = "api-unknown-path"

_NUL = "\x00"
_MESSAGE = "the URL contains a NUL character (%00), which no tenant ID or filter may hold"


class RequestMiddleware:
    """Sync and async capable, so under ASGI it costs no thread hop per request.

    Subclasses answer a request early (`refuse`) and/or amend the response (`amend`).
    """

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self._acall(request)
        refusal = self.refuse(request)
        if refusal is not None:
            return refusal
        return self.amend(request, self.get_response(request))

    async def _acall(self, request: HttpRequest) -> Any:
        refusal = self.refuse(request)
        if refusal is not None:
            return refusal
        return self.amend(request, await self.get_response(request))

    def refuse(self, request: HttpRequest) -> HttpResponse | None:
        return None

    def amend(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        return response


class RefuseNulMiddleware(RequestMiddleware):
    """400 for a NUL in the path or the query string, before any view runs."""

    def refuse(self, request: HttpRequest) -> HttpResponse | None:
        if not _has_nul(request):
            return None
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": _MESSAGE}, status=400)
        return bad_request(request, ValueError(_MESSAGE))


def _has_nul(request: HttpRequest) -> bool:
    if _NUL in request.path:
        return True
    return any(
        _NUL in key or any(_NUL in value for value in values) for key, values in request.GET.lists()
    )


class ApiSlashMiddleware(RequestMiddleware):
    """JSON 404 for an /api/ URL that names an endpoint but for its final slash."""

    def refuse(self, request: HttpRequest) -> HttpResponse | None:
        path = request.path_info
        if not path.startswith("/api/") or path.endswith("/"):
            return None
        urlconf = getattr(request, "urlconf", None)
        if _names_endpoint(path, urlconf) or not _names_endpoint(f"{path}/", urlconf):
            # An endpoint without a slash, or no endpoint at all (the catch-all's JSON 404).
            return None
        detail = f"no endpoint at {request.path}; did you mean {request.path}/?"
        return JsonResponse({"detail": detail}, status=404)


def _names_endpoint(path: str, urlconf: Any) -> bool:
    """Whether `path` resolves to a view other than the catch-all for unknown API paths."""
    try:
        match = resolve(path, urlconf)
    except Resolver404:
        return False
    return match.url_name != UNKNOWN_API_PATH


class ContentSecurityPolicyMiddleware(RequestMiddleware):
    """Sets `settings.CONTENT_SECURITY_POLICY` on every response that has no policy of its own."""

    def amend(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = "; ".join(
                f"{directive} {sources}"
                for directive, sources in settings.CONTENT_SECURITY_POLICY.items()
            )
        return response


class PrivateCacheMiddleware(RequestMiddleware):
    """Marks every response `private, no-cache` unless it has a `Cache-Control` of its own."""

    def amend(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if "Cache-Control" not in response:
            response["Cache-Control"] = "private, no-cache"
        return response
