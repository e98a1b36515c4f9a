"""What every REST view shares: parsers, renderers, error shapes for the schema."""

from __future__ import annotations

import io
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import exceptions
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from api.rest.content import LimitedJSONParser
from api.rest.known_params import known_query_params
from api.rest.query_params import bool_param
from api.store.exceptions import ConfigValidationError
from api.store.import_plan import tenant_id_errors
from api.store.models import ConfigRevision
from api.store.roles import role_of

__all__ = [
    "IF_MATCH",
    "IF_MATCH_REQUIRED",
    "IF_NONE_MATCH",
    "ApiView",
    "FormatChecked",
    "JsonErrors",
    "StreamedBodyRequest",
    "check_tenant_id",
    "errors",
    "flag",
    "format_error",
    "refuse_repeated_params",
    "refuse_unknown_params",
]

_ERROR_TEXT = {
    400: "validation failed: DRF's nested error shape, one list of messages per field",
    401: "not authenticated",
    403: "authenticated but without the needed role",
    404: "no such object",
    406: "Accept names no type the endpoint writes (JSON; runtime-config/ also YAML)",
    409: "the request is ambiguous as sent (e.g. an id several replicas hold: name one)",
    412: "If-Match does not name the current version (ETag header: the current one)",
    413: "request body over the size limit",
    415: "unsupported Content-Type",
    428: "If-Match is required to change an existing object",
    503: "a replica that may hold the object did not answer (replicas_missing); try again",
}

IF_MATCH = OpenApiParameter(
    "If-Match",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    description='the ETag last read (e.g. "42"), or *; required to change an existing object',
)
# On writes to an object that must exist (PATCH, DELETE): without it, 428.
IF_MATCH_REQUIRED = OpenApiParameter(
    "If-Match",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    required=True,
    description='the ETag last read (e.g. "42"), or *',
)
IF_NONE_MATCH = OpenApiParameter(
    "If-None-Match",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    description="on PUT, * means create only; on GET, a current ETag gives 304",
)


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    """Schema entries for the error responses an endpoint can give: `codes`, and
    the 401, 403 and 406 (a refused `Accept`) any of them can."""
    return {
        code: OpenApiResponse(response=OpenApiTypes.OBJECT, description=_ERROR_TEXT[code])
        for code in (401, 403, 406, *codes)
    }


def check_tenant_id(tenant_id: str) -> None:
    """A path tenant ID Cortex could never send is a 400 naming `tenant_id`
    (on endpoints that answer for any tenant, configured or not)."""
    problems = tenant_id_errors(tenant_id)
    if problems:
        raise ConfigValidationError(problems)


def body_of(request: Request, what: str) -> Any:
    """The parsed body; a request without one is a 400 saying `what` it must hold.

    DRF reads a missing body as `{}` (whatever its media type), so a PUT of
    a tenant with no body stored an empty block: every limit and rule of
    that tenant gone, with a 200.
    """
    if request.stream is None:
        raise exceptions.ParseError(f"a body is required: {what}")
    return request.data


def refuse_repeated_params(request: Request) -> None:
    """A query parameter given more than once is a 400 naming it.

    Django keeps the last value, so `?dry_run=1&dry_run=0` was a real
    rollback or import, and `?limit=abc&limit=1` passed the strict reading
    of `limit`: no parameter of this API takes a list, so a repeat can only
    be a mistake, and which value was meant cannot be known.
    """
    repeated = {
        name: [f"given {len(values)} times; give it once"]
        for name, values in request.query_params.lists()
        if len(values) > 1
    }
    if repeated:
        raise exceptions.ValidationError(repeated)


def refuse_unknown_params(request: Request, view: type) -> None:
    """A query parameter the operation does not take is a 400 naming it, with
    the ones it does take (`api.rest.known_params`).

    `format` is left to DRF, which reads it on every view (`?format=json`).
    """
    known = known_query_params(view, request.method or "GET")
    if known is None:
        return
    takes = f"this operation takes {', '.join(sorted(known))}" if known else "it takes none"
    unknown = {
        name: [f"not a parameter of this operation; {takes}"]
        for name in request.query_params
        if name not in known and name != "format"
    }
    if unknown:
        raise exceptions.ValidationError(unknown)


def format_error(request: Request, view: APIView) -> dict[str, list[str]] | None:
    """The 400 body for a `?format=` none of the view's renderers writes, else None.

    DRF answers such a value with a bare 404 "Not found." (as if the
    endpoint were missing) and ignores an empty one; it is a query
    parameter like any other, so a bad value is a 400 naming it.
    """
    name = view.settings.URL_FORMAT_OVERRIDE
    value = request.query_params.get(name) if name else None
    formats = list(dict.fromkeys(renderer.format for renderer in view.renderer_classes))
    if value is None or value in formats:
        return None
    return {name: [f"must be one of {', '.join(formats)}"]}


def flag(request: Request, name: str) -> bool:
    """A boolean query parameter: 1/true/yes/on or 0/false/no/off (any case);
    anything else is a 400 naming it (`api.rest.query_params.bool_param`)."""
    return bool_param(request, name)


class FormatChecked(APIView):
    """A view whose bad `?format=` is a 400 naming it (`format_error`), in JSON.

    Its `initial` calls `refuse_bad_format` after authentication and
    permissions, so an anonymous caller gets its 401 first.
    """

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        # Refused in `initial`, once the caller is known; until then the
        # answer is JSON, as every API error.
        if not force and format_error(request, self) is not None:
            return JSONRenderer(), JSONRenderer.media_type
        return super().perform_content_negotiation(request, force)

    def refuse_bad_format(self, request: Request) -> None:
        bad_format = format_error(request, self)
        if bad_format is not None:
            raise exceptions.ValidationError(bad_format)


class JsonErrors(APIView):
    """A view writing some other type (YAML, OpenAPI) whose errors are still JSON.

    One error shape for every API answer, also to a client that asked for
    the YAML export or the OpenAPI document (whose renderer dumped DRF's
    error object as YAML): and never a YAML mapping a pipeline could mistake
    for the document it asked for.
    """

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        if force:
            # Negotiation failed (406): answered in JSON, not in DRF's fallback
            # (the first renderer) that the client may just have refused.
            return JSONRenderer(), JSONRenderer.media_type
        return super().perform_content_negotiation(request, force)

    def handle_exception(self, exc: Exception) -> Any:
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return super().handle_exception(exc)


class StreamedBodyRequest(Request):
    """A request whose body is read when it came without a Content-Length.

    DRF takes a request with no Content-Length for one with no body, but a
    client that streams its body (`Transfer-Encoding: chunked`: `curl -T -`,
    Go's HTTP client with a reader of unknown length) sends none. Its body
    went unread: a rollback whose body would be refused rolled back, and a
    cancel whose fields were misspelt cancelled. Daphne holds the whole
    body by then; one byte past the view's limit is read, so the parser's
    own check still answers 413, and an empty body is still none.
    """

    def __init__(self, *args: Any, body_limit: int, **kwargs: Any) -> None:
        self._body_limit = body_limit
        super().__init__(*args, **kwargs)

    def _load_stream(self) -> None:
        super()._load_stream()
        if self._stream is None and "HTTP_TRANSFER_ENCODING" in self._request.META:
            body = self._request.read(self._body_limit + 1)
            self._stream = io.BytesIO(body) if body else None


def refuse_unread_encodings(request: Request) -> None:
    """415 for a body this API would misread: compressed, or of a wildcard type.

    Bodies are never decompressed, so a `Content-Encoding: br` body that
    happened to be plain JSON was applied, and a gzip one was a JSON parse
    error about byte 0x8b; and `Content-Type: */*` matched the first
    parser, JSON, as if the client had said so.
    """
    if request.stream is None:
        return
    encoding = request.META.get("HTTP_CONTENT_ENCODING", "").strip().lower()
    if encoding not in ("", "identity"):
        raise exceptions.UnsupportedMediaType(
            request.content_type,
            detail=f"Content-Encoding {encoding!r}: bodies are read as sent; send it "
            "uncompressed, without Content-Encoding",
        )
    if "*" in request.content_type.split(";", 1)[0]:
        raise exceptions.UnsupportedMediaType(
            request.content_type,
            detail=f"Content-Type {request.content_type!r} names no type: send the body's own "
            "(application/json, or application/yaml where the endpoint takes YAML)",
        )


class MethodsBeforeRoles(APIView):
    """A method the view does not have is 405 to anyone with a REST role.

    DRF judges the role first, so a viewer's TRACE read "this needs the
    editor role", as if an editor could. An anonymous caller still gets its
    401, a frontend or querier token its 403.
    """

    def check_permissions(self, request: Request) -> None:
        method = request.method.lower() if request.method else ""
        handled = method in self.http_method_names and hasattr(self, method)
        if not handled and role_of(request.user) is not None:
            raise exceptions.MethodNotAllowed(request.method)
        super().check_permissions(request)


class ApiView(MethodsBeforeRoles, FormatChecked):
    """JSON in and out, bodies limited by `api.rest.content.LimitedJSONParser`."""

    parser_classes = [LimitedJSONParser]
    renderer_classes = [JSONRenderer]
    source: Any = ConfigRevision.Source.API

    def initialize_request(self, request: Any, *args: Any, **kwargs: Any) -> Request:
        parsers = self.get_parsers()
        return StreamedBodyRequest(
            request,
            parsers=parsers,
            authenticators=self.get_authenticators(),
            negotiator=self.get_content_negotiator(),
            parser_context=self.get_parser_context(request),
            # The largest a parser here would read (each takes the view's
            # `max_body_bytes` first): a body cut short of it read as other text.
            body_limit=getattr(self, "max_body_bytes", max(p.max_bytes for p in parsers)),
        )

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # After authentication and permissions: an anonymous caller gets its 401.
        super().initial(request, *args, **kwargs)
        refuse_repeated_params(request)
        self.refuse_bad_format(request)
        refuse_unknown_params(request, type(self))
        refuse_unread_encodings(request)
