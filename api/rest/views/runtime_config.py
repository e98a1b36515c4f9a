"""`runtime-config/`: the whole tenant set as Cortex's runtime-config YAML.

GET exports `overrides:` keyed by tenant, with the tenant set's version as
ETag. PUT takes a whole runtime-config file (YAML or JSON) as the complete
desired state: tenants missing from it are deleted, as Cortex would forget
them; while any tenant exists it needs If-Match with that ETag, as a tenant
write does, so a GitOps client cannot wipe a concurrent edit. Everything is
validated before anything is written; `?dry_run=1` returns the same plan
and writes nothing.
Other Cortex limits in the file and other top-level sections are reported
as ignored, never silently dropped.

The export is what a GitOps client feeds back to Cortex, so it is written as
Cortex reads it: durations stored as numbers of seconds as duration strings
(Cortex's `model.Duration` refuses a number), and with `?cortex_version=`
without the fields that version does not know (its strict loader refuses
them). Stored blocks, and the tenant API, keep values as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from django.contrib.auth import get_user_model
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiRequest, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import (
    APIException,
    ParseError,
    UnsupportedMediaType,
    ValidationError,
)
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from api.rest import offload
from api.rest.content import (
    MAX_YAML_BODY_BYTES,
    YAML_PARSERS,
    LimitedJSONParser,
    TextYAMLRenderer,
    XYAMLRenderer,
    YAMLRenderer,
    read_limited,
    refuse_charset,
)
from api.rest.errors import PreconditionRequired, etag_for, split_path
from api.rest.offload import OVERRIDES, ImportAuthor, ImportJob
from api.rest.serializers import ImportResultSerializer
from api.rest.views.base import IF_NONE_MATCH, ApiView, JsonErrors, errors, flag
from api.rest.views.conditional import NamesConflicts, expected_for_replace_all, not_modified
from api.store import selectors
from api.store.cortex_export import block_for_cortex
from api.store.exceptions import ConfigValidationError, VersionConflict
from api.store.models import ConfigRevision, Tenant
from api.store.one_version import at_one_version
from api.wire import rule_reports

__all__ = ["RuntimeConfigView", "tenant_aware_splitter"]

IF_MATCH_SET = OpenApiParameter(
    "If-Match",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    description=(
        'the ETag of the export last read (e.g. "42"), or *; required while any tenant '
        "exists (except for a dry run): 428 without it, 412 when stale"
    ),
)


# A Cortex release from 1.15 on (older ones have no per-tenant
# `max_outstanding_requests_per_tenant`), as `1.17`, `1.15.3` or `v1.18.0`;
# the schema states it, so the server reads exactly what the schema allows.
_NUMBER = "(?:0|[1-9][0-9]{0,3})"
_FROM_1_15 = (
    f"(?:1\\.(?:1[5-9]|[2-9][0-9]|[1-9][0-9]{{2,3}})|(?:[2-9]|[1-9][0-9]{{1,3}})\\.{_NUMBER})"
)
CORTEX_VERSION_PATTERN = f"^v?({_FROM_1_15})(?:\\.{_NUMBER})?$"
_CORTEX_VERSION = re.compile(CORTEX_VERSION_PATTERN)

CORTEX_VERSION = OpenApiParameter(
    "cortex_version",
    # Empty is allowed and means absent (a form's empty choice): the schema says so.
    {"type": "string", "pattern": f"^$|{CORTEX_VERSION_PATTERN}"},
    OpenApiParameter.QUERY,
    description=(
        "the Cortex version the export is for (1.15 or later, e.g. 1.15.3, 1.17): fields "
        "it does not know are left out (query_priority before 1.17, query_rejection "
        "before 1.18, max_query_capacity always, as no Cortex has it); absent or empty: "
        "every field"
    ),
)


def _cortex_version(request: Request) -> tuple[int, int] | None:
    """`?cortex_version=` as (major, minor); absent or empty: None (every field)."""
    raw = request.query_params.get(CORTEX_VERSION.name) or None
    if raw is None:
        return None
    match = _CORTEX_VERSION.fullmatch(raw)
    if match is None:
        shown = raw if len(raw) <= 40 else f"{raw[:37]}..."
        message = (
            f"must be a Cortex version from 1.15 on, such as 1.15.3 or 1.17, got {shown!r} "
            "(older Cortex has no per-tenant max_outstanding_requests_per_tenant)"
        )
        raise ValidationError({CORTEX_VERSION.name: [message]})
    major, minor = match[1].split(".")
    return int(major), int(minor)


class UnreadableForVersion(APIException):
    """409: the stored rules use fields the named Cortex version cannot read."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "the named Cortex version cannot read the stored rules"
    default_code = "unreadable_for_version"


def _export_for(overrides: dict[str, Any], cortex: tuple[int, int] | None) -> dict[str, Any]:
    """Every tenant's block as `cortex` (None: any version) reads it.

    A 409 naming `cortex_version` lists every rule that version would read
    differently (wider), rather than exporting it so.
    """
    out: dict[str, Any] = {}
    unreadable: list[str] = []
    for tenant_id, block in overrides.items():
        out[tenant_id], paths = block_for_cortex(block, cortex)
        unreadable += [f"{OVERRIDES}.{tenant_id}.{path}" for path in paths]
    if unreadable:
        shown = ", ".join(unreadable[:10]) + (", ..." if len(unreadable) > 10 else "")
        named = ".".join(str(part) for part in cortex or ())
        message = (
            f"Cortex {named} cannot read these query_priority attribute "
            f"fields (1.18 added them), and without them the rules would match more "
            f"queries: {shown}"
        )
        raise UnreadableForVersion({CORTEX_VERSION.name: [message]})
    return out


def tenant_aware_splitter(tenant_ids: Iterable[str]) -> Any:
    """A path splitter that keeps dotted tenant IDs (`a.b`) whole.

    Import errors are `overrides.<tenant>.<field path>`, and a tenant ID may
    itself contain dots, so the ID is found among the file's own IDs
    (the longest that fits) instead of splitting on every dot.

    The ID is looked up by the path's own prefixes (each ending where a `.`
    or `[` follows, longest first) in a set, so each error costs its path's
    length, not the number of tenants: a file of 16,000 bad tenants
    compared every error with every ID and took nearly a minute to answer.
    """
    known = frozenset(tenant_ids)
    head = f"{OVERRIDES}."

    def split(path: str) -> list[str]:
        if path.startswith(head):
            rest = path[len(head) :]
            for end in _prefix_ends(rest):
                tenant_id = rest[:end]
                if tenant_id in known:
                    tail = rest[end:].lstrip(".")
                    return [OVERRIDES, tenant_id, *split_path(tail)]
        return split_path(path)

    return split


def _prefix_ends(rest: str) -> Iterator[int]:
    """Where a tenant ID could end in `rest`, longest first: its end, or before a `.`/`[`."""
    yield len(rest)
    for end in range(len(rest) - 1, -1, -1):
        if rest[end] in ".[":
            yield end


class RuntimeConfigView(JsonErrors, NamesConflicts, ApiView):
    """Cortex runtime-config import and export."""

    conflict_subject = "the tenant set (the runtime-config export)"
    conflict_next = "GET runtime-config/ again and send its ETag as If-Match"
    conflict_exists = "tenants exist"

    parser_classes = [*YAML_PARSERS, LimitedJSONParser]
    # Every YAML media type the import reads, out too (`Accept: text/yaml` was
    # a 406); `application/yaml` first, for `*/*` and `?format=yaml`.
    renderer_classes = [YAMLRenderer, JSONRenderer, TextYAMLRenderer, XYAMLRenderer]
    max_body_bytes = MAX_YAML_BODY_BYTES
    # Its errors are JSON, also when the YAML export was asked for (JsonErrors).

    def get_renderers(self) -> list[BaseRenderer]:
        # The export (GET, and HEAD with its headers) reads as YAML by default;
        # the import's report as JSON.
        renderers = super().get_renderers()
        if self.request is not None and self.request.method not in ("GET", "HEAD"):
            renderers.sort(key=lambda r: not isinstance(r, JSONRenderer))
        return renderers

    @extend_schema(
        operation_id="runtime_config_retrieve",
        summary="Export the Cortex runtime config",
        parameters=[CORTEX_VERSION, IF_NONE_MATCH],
        responses={
            304: OpenApiResponse(description="If-None-Match names the current version"),
            (200, "application/yaml"): OpenApiResponse(
                OpenApiTypes.OBJECT, description="`overrides:` keyed by tenant"
            ),
            (200, "application/json"): OpenApiTypes.OBJECT,
            **errors(400),
            409: OpenApiResponse(
                OpenApiTypes.OBJECT,
                description=(
                    "cortex_version names a Cortex that cannot read a stored rule's "
                    "attribute field (1.17: those 1.18 added); left out, the rule would "
                    "match more queries"
                ),
            ),
        },
    )
    def get(self, request: Request) -> Response:
        cortex = _cortex_version(request)
        version = selectors.overrides_version_get()
        if not_modified(request, version):
            response = Response(status=status.HTTP_304_NOT_MODIFIED)
        else:
            version, export = at_one_version(
                selectors.overrides_version_get, selectors.runtime_config_export
            )
            response = Response({OVERRIDES: _export_for(export, cortex)})
        response["ETag"] = etag_for(version)
        return response

    @extend_schema(
        operation_id="runtime_config_update",
        summary="Import a Cortex runtime config",
        parameters=[
            OpenApiParameter("dry_run", OpenApiTypes.BOOL, description="plan only, write nothing"),
            IF_MATCH_SET,
            IF_NONE_MATCH,
        ],
        request={
            "application/yaml": OpenApiRequest(OpenApiTypes.OBJECT),
            "application/json": OpenApiRequest(OpenApiTypes.OBJECT),
        },
        responses={
            200: ImportResultSerializer,
            **errors(400, 412, 413, 415, 428),
            503: OpenApiResponse(
                OpenApiTypes.OBJECT, description="the import worker process died; try again"
            ),
        },
    )
    def put(self, request: Request) -> Response:
        # The body is parsed where the import runs (see api.rest.offload), so only
        # its media type and size are checked here.
        parser = request.negotiator.select_parser(request, self.get_parsers())
        if parser is None:
            raise UnsupportedMediaType(request.content_type)
        refuse_charset(request.content_type)
        dry_run = flag(request, "dry_run")
        # Checked here and again in the worker's transaction, so a race still
        # ends in 412. Unmet, the file is still parsed and validated (a bad
        # file is a 400 whatever the preconditions say) but never written.
        refusal: APIException | VersionConflict | None = None
        try:
            expected, require_empty = expected_for_replace_all(
                request,
                selectors.overrides_version_get(),
                Tenant.objects.exists(),
                required=not dry_run,
            )
        except (PreconditionRequired, VersionConflict) as exc:
            refusal, expected, require_empty = exc, None, False
        job = ImportJob(
            body=read_limited(request.stream, self.max_body_bytes),
            media_type=parser.media_type,
            author=_import_author(request.user),
            dry_run=dry_run,
            source=str(ConfigRevision.Source.YAML),
            expected_version=expected,
            require_empty=require_empty,
            refused=refusal is not None,
            **_traffic(dry_run and refusal is None),
        )
        outcome = offload.import_submit(job)
        if outcome.conflict:
            raise VersionConflict(outcome.current_version)
        if outcome.parse_error is not None:
            raise ParseError(outcome.parse_error)
        if outcome.errors:
            self.error_path_splitter = tenant_aware_splitter(outcome.tenant_ids)
            raise ConfigValidationError(outcome.errors)
        if refusal is not None:
            raise refusal
        response = Response(outcome.body)
        if outcome.applied_version is not None:
            # The version this import committed: the next If-Match.
            response["ETag"] = etag_for(outcome.applied_version)
        return response


def _traffic(dry_run: bool) -> dict[str, Any]:
    """For a dry run, this replica's recent traffic to replay (see api.rest.dry_run)."""
    if not dry_run:
        return {}
    rows = rule_reports.sample_rows()
    return {
        "traffic": tuple((t, tuple(r)) for t, r in sorted(rows.items())),
        "queriers": tuple(rule_reports.connected_queriers()),
    }


def _import_author(user: Any) -> ImportAuthor | None:
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    pk = user.pk if isinstance(user, get_user_model()) else None
    return ImportAuthor(user_id=pk, username=user.get_username())
