"""HTTP errors of the REST API, and the DRF exception handler that makes them.

Config-store exceptions carry no HTTP knowledge, so this is the one place
that decides their status codes: `ConfigValidationError` → 400,
`NotFound` → 404, `VersionConflict` → 412 (If-Match failed), and the API's
own `PreconditionRequired` → 428 and `PayloadTooLarge` → 413.

Validation errors use DRF's nested shape, so clients that already read DRF
errors need nothing new. A validator path such as
`query_priority.priorities[1].query_attributes[0].regex` becomes
`{"query_priority": {"priorities": {"1": {"query_attributes": {"0":
{"regex": ["..."]}}}}}}`: list items are keyed by their index as a string
(DRF's `ListField` convention, sparse so only failing items appear), and a
message about a whole object that also has failing children goes under
`non_field_errors` inside it, as DRF does for nested serializers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler

from api.store.exceptions import (
    DATABASE_DOWN_RETRY_SECONDS,
    DATABASE_UNREACHABLE,
    ConfigValidationError,
    NotFound,
    VersionConflict,
)
from scheduler_core.errors import FieldError

__all__ = [
    "DATABASE_DOWN_RETRY_SECONDS",
    "MAX_LISTED_ERRORS",
    "PayloadTooLarge",
    "PreconditionRequired",
    "api_bad_request",
    "api_exception_handler",
    "api_not_found",
    "api_server_error",
    "etag_for",
    "nested_errors",
    "split_path",
    "unlisted_errors_message",
]

ROOT = "(root)"
# How many validation errors one answer lists (see nested_errors).
MAX_LISTED_ERRORS = 1000

log = logging.getLogger(__name__)

Splitter = Callable[[str], list[str]]


class PreconditionRequired(exceptions.APIException):
    """A write to an existing object came without `If-Match` (RFC 6585)."""

    status_code = status.HTTP_428_PRECONDITION_REQUIRED
    default_detail = (
        "this object exists: send If-Match with the ETag you last read, "
        "so a concurrent change is never overwritten"
    )
    default_code = "precondition_required"


class PayloadTooLarge(exceptions.APIException):
    """The request body is over the endpoint's size limit."""

    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "request body too large"
    default_code = "payload_too_large"


def etag_for(version: int) -> str:
    """The strong ETag of a version: its decimal value, quoted."""
    return f'"{version}"'


def split_path(path: str) -> list[str]:
    """`a.b[1].c` → `["a", "b", "1", "c"]`; the root path gives `[]`."""
    if path in ("", ROOT):
        return []
    parts: list[str] = []
    for dotted in path.split("."):
        name, _, rest = dotted.partition("[")
        if name:
            parts.append(name)
        if rest:
            parts += [index for index in rest.rstrip("]").split("][") if index]
    return parts


def _add(tree: dict[str, Any], parts: list[str], message: str) -> None:
    node = tree
    for part in parts[:-1]:
        child = node.get(part)
        if isinstance(child, list):
            child = {api_settings.NON_FIELD_ERRORS_KEY: child}
            node[part] = child
        elif child is None:
            child = {}
            node[part] = child
        node = child
    leaf = parts[-1] if parts else api_settings.NON_FIELD_ERRORS_KEY
    existing = node.get(leaf)
    if isinstance(existing, dict):
        existing.setdefault(api_settings.NON_FIELD_ERRORS_KEY, []).append(message)
    else:
        node.setdefault(leaf, []).append(message)


def nested_errors(
    errors: Iterable[FieldError], split: Splitter = split_path, limit: int = MAX_LISTED_ERRORS
) -> dict[str, Any]:
    """DRF's nested error dict for validator errors (see the module doc).

    At most `limit` errors are listed: a 1 MB file of 60,000 unknown keys
    answered a 1.6 MB 400 no one reads to the end. The answer says how many
    more there were (in the root's `non_field_errors`), so it never looks
    complete when it is not.
    """
    tree: dict[str, Any] = {}
    listed = unlisted = 0
    for error in errors:
        if listed < limit:
            _add(tree, split(error.path), error.message)
            listed += 1
        else:
            unlisted += 1
    if unlisted:
        _add(tree, [], unlisted_errors_message(unlisted, limit))
    return tree


def unlisted_errors_message(unlisted: int, limit: int = MAX_LISTED_ERRORS) -> str:
    """The last entry of an error answer cut at `limit`: how many were left out."""
    noun = "error was" if unlisted == 1 else "errors were"
    return (
        f"{unlisted} more {noun} not listed (an answer lists the first {limit}); "
        "fix these and send it again to see the rest"
    )


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, extended with the config store's exceptions."""
    if isinstance(exc, ConfigValidationError):
        split = getattr(context.get("view"), "error_path_splitter", split_path)
        return Response(nested_errors(exc.errors, split), status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, VersionConflict):
        # The view names what conflicted, in its own terms (a tenant, the tenant set).
        describe = getattr(context.get("view"), "version_conflict_detail", None)
        detail = describe(exc) if describe is not None else str(exc)
        response = Response({"detail": detail}, status=status.HTTP_412_PRECONDITION_FAILED)
        if exc.current_version is not None:
            response["ETag"] = etag_for(exc.current_version)
        return response
    if isinstance(exc, NotFound):
        return Response({"detail": str(exc)}, status=status.HTTP_404_NOT_FOUND)
    if isinstance(exc, DATABASE_UNREACHABLE):
        # The database is down or refusing connections (token checks read it
        # on every call): a 500 "internal error" sent operators to the code.
        log.warning("REST call answered 503: the database did not answer (%s)", exc)
        detail = "the database did not answer; try again shortly"
        response = Response({"detail": detail}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        response["Retry-After"] = str(DATABASE_DOWN_RETRY_SECONDS)
        return response
    return drf_exception_handler(exc, context)


def api_not_found(request: HttpRequest) -> JsonResponse:
    """404 for a path under /api/ that names no endpoint: JSON, as every API answer.

    Django's own page is HTML, which an API client cannot read as an error.
    """
    return JsonResponse(
        {
            "detail": f"no endpoint at {request.path}; "
            "the endpoints are listed at /api/v1/ and in /api/v1/schema/"
        },
        status=404,
    )


def api_bad_request(request: HttpRequest, exception: Exception) -> JsonResponse:
    """400 under /api/ that no view answered (Django's SuspiciousOperation), in JSON.

    A Host header the server does not answer to is the usual one; as
    Django's own page does, the answer does not echo ALLOWED_HOSTS' advice.
    """
    if isinstance(exception, DisallowedHost):
        detail = "the Host header names no host this server answers to"
    else:
        detail = "bad request; the server log has the details"
    return JsonResponse({"detail": detail}, status=400)


def api_server_error(request: HttpRequest) -> JsonResponse:
    """500 under /api/ (an error no view turned into an answer), in JSON."""
    return JsonResponse({"detail": "internal error; the server log has the details"}, status=500)
