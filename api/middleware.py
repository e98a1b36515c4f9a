"""Request guards every HTTP view relies on (listed in `settings.MIDDLEWARE`).

`RefuseNulMiddleware`: PostgreSQL cannot hold a NUL character in a text
value, and psycopg refuses to send one, so a `%00` in a URL path (a tenant
ID) or a query parameter (`?search=`, `?key=`, `?kind=`) that reached a
query answered 500 there while SQLite merely found nothing. No stored value
can contain NUL (every write refuses it: JSON and YAML bodies, forms), so
such a request can only ever miss; it is refused up front with 400, the same
on every database and for every view, present or future. The REST API gets
its JSON error shape, pages the site's 400 page.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import bad_request

__all__ = ["RefuseNulMiddleware"]

_NUL = "\x00"
_MESSAGE = "the URL contains a NUL character (%00), which no tenant ID or filter may hold"


def _has_nul(request: HttpRequest) -> bool:
    if _NUL in request.path:
        return True
    return any(
        _NUL in key or any(_NUL in value for value in values) for key, values in request.GET.lists()
    )


class RefuseNulMiddleware:
    """400 for a NUL in the path or the query string, before any view runs.

    Sync and async capable, so under ASGI it costs no thread hop per request.
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
        if _has_nul(request):
            return _refusal(request)
        return self.get_response(request)

    async def _acall(self, request: HttpRequest) -> Any:
        if _has_nul(request):
            return _refusal(request)
        return await self.get_response(request)


def _refusal(request: HttpRequest) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": _MESSAGE}, status=400)
    return bad_request(request, ValueError(_MESSAGE))
