"""`runtime-config/`: the whole tenant set as Cortex's runtime-config YAML.

GET exports `overrides:` keyed by tenant. PUT takes a whole runtime-config
file (YAML or JSON) as the complete desired state: tenants missing from it
are deleted, as Cortex would forget them. Everything is validated before
anything is written; `?dry_run=1` returns the same plan and writes nothing.
Other Cortex limits in the file and other top-level sections are reported
as ignored, never silently dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiRequest, OpenApiResponse, extend_schema
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from api import selectors, services
from api.content import MAX_YAML_BODY_BYTES, YAML_PARSERS, LimitedJSONParser, YAMLRenderer
from api.errors import ROOT, etag_for, split_path
from api.exceptions import ConfigValidationError
from api.import_plan import ImportResult
from api.models import ConfigRevision
from api.serializers import ImportResultSerializer
from api.views.base import ApiView, errors, flag
from scheduler_core.errors import FieldError

__all__ = ["RuntimeConfigView", "import_body", "tenant_aware_splitter"]

OVERRIDES = "overrides"


def tenant_aware_splitter(tenant_ids: list[str]) -> Any:
    """A path splitter that keeps dotted tenant IDs (`a.b`) whole.

    Import errors are `overrides.<tenant>.<field path>`, and a tenant ID may
    itself contain dots, so the ID is found among the file's own IDs
    (longest first) instead of splitting on every dot.
    """
    ordered = sorted(tenant_ids, key=len, reverse=True)

    def split(path: str) -> list[str]:
        head = f"{OVERRIDES}."
        if path.startswith(head):
            rest = path[len(head) :]
            for tenant_id in ordered:
                if rest == tenant_id or rest.startswith((f"{tenant_id}.", f"{tenant_id}[")):
                    tail = rest[len(tenant_id) :].lstrip(".")
                    return [OVERRIDES, tenant_id, *split_path(tail)]
        return split_path(path)

    return split


def import_body(result: ImportResult, dry_run: bool, top_level: list[str]) -> dict[str, Any]:
    """The import's outcome (or, for a dry run, its plan) as the response body."""
    return {
        "dry_run": dry_run,
        "applied": not dry_run and result.has_changes,
        "created": result.created,
        "changed": result.changed,
        "deleted": result.deleted,
        "unchanged": result.unchanged,
        "ignored": result.ignored,
        "ignored_top_level": top_level,
        "diffs": {
            tenant_id: [{"path": c.path, "before": c.before, "after": c.after} for c in changes]
            for tenant_id, changes in result.diffs.items()
        },
        "version": result.version,
        "revision_id": result.revision_id,
    }


def _overrides_of(document: Any) -> tuple[Any, list[str]]:
    if not isinstance(document, Mapping):
        raise ConfigValidationError([FieldError(ROOT, "a runtime-config file must be a mapping")])
    if OVERRIDES not in document:
        message = "required: the file's overrides are the complete tenant set"
        raise ConfigValidationError([FieldError(OVERRIDES, message)])
    others = sorted(str(key) for key in document if key != OVERRIDES)
    overrides = document[OVERRIDES]
    return ({} if overrides is None else overrides), others


class RuntimeConfigView(ApiView):
    """Cortex runtime-config import and export."""

    parser_classes = [*YAML_PARSERS, LimitedJSONParser]
    renderer_classes = [YAMLRenderer, JSONRenderer]
    max_body_bytes = MAX_YAML_BODY_BYTES

    def get_renderers(self) -> list[BaseRenderer]:
        # The export reads as YAML by default; the import's report as JSON.
        renderers = super().get_renderers()
        if self.request is not None and self.request.method != "GET":
            renderers.sort(key=lambda r: not isinstance(r, JSONRenderer))
        return renderers

    @extend_schema(
        operation_id="runtime_config_retrieve",
        responses={
            (200, "application/yaml"): OpenApiResponse(
                OpenApiTypes.OBJECT, description="`overrides:` keyed by tenant"
            ),
            (200, "application/json"): OpenApiTypes.OBJECT,
            **errors(),
        },
    )
    def get(self, request: Request) -> Response:
        response = Response({OVERRIDES: selectors.runtime_config_export()})
        response["ETag"] = etag_for(selectors.config_version_get())
        return response

    @extend_schema(
        operation_id="runtime_config_update",
        parameters=[
            OpenApiParameter("dry_run", OpenApiTypes.BOOL, description="plan only, write nothing")
        ],
        request={
            "application/yaml": OpenApiRequest(OpenApiTypes.OBJECT),
            "application/json": OpenApiRequest(OpenApiTypes.OBJECT),
        },
        responses={200: ImportResultSerializer, **errors(400, 413, 415)},
    )
    def put(self, request: Request) -> Response:
        overrides, top_level = _overrides_of(request.data)
        if isinstance(overrides, Mapping):
            self.error_path_splitter = tenant_aware_splitter([str(k) for k in overrides])
        dry_run = flag(request, "dry_run")
        result = services.runtime_config_import(
            overrides=overrides,
            author=request.user,
            source=ConfigRevision.Source.YAML,
            dry_run=dry_run,
        )
        return Response(import_body(result, dry_run, top_level))
