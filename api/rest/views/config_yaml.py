"""`tenants/{id}/yaml/` and `revisions/compare/`: the config as YAML, and any two states diffed.

GET `tenants/{id}/yaml/` is the tenant's block as the runtime-config export
writes it; POST reads a pasted block back (with or without its tenant key
line) and says what it means, the Cortex limits not used here, and every
validation error with its line; it writes nothing, so viewers may use it.
GET `revisions/compare/?from=&to=` diffs the state after one revision with
the state after another (`api.store.revision_states`).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.rest.errors import etag_for
from api.rest.permissions import AnyRole
from api.rest.serializers import RevisionSerializer
from api.rest.serializers_yaml import (
    BlockParseRequestSerializer,
    BlockParseSerializer,
    CompareSerializer,
    TenantYamlSerializer,
)
from api.rest.views.base import ApiView, check_tenant_id, errors
from api.store import selectors
from api.store.config_yaml import parse_tenant_block, tenant_block_yaml
from api.store.exceptions import ConfigValidationError
from api.store.import_plan import tenant_id_errors
from api.store.revision_states import CONFIG, OVERRIDES, SETTINGS, Scope, compare_revisions
from scheduler_core.bounds import parse_decimal
from scheduler_core.errors import FieldError
from scheduler_core.fields import shown

__all__ = ["RevisionCompareView", "TenantYamlView"]

_SCOPES = (SETTINGS, OVERRIDES, CONFIG)


class TenantYamlView(ApiView):
    """One tenant's block as YAML; POST parses a pasted block (writes nothing)."""

    permission_classes = [AnyRole]

    @extend_schema(
        operation_id="tenants_yaml_retrieve",
        summary="Get a tenant's block as YAML",
        responses={200: TenantYamlSerializer, **errors(404)},
    )
    def get(self, request: Request, tenant_id: str) -> Response:
        tenant = selectors.tenant_get(tenant_id=tenant_id)
        body = {
            "tenant_id": tenant.tenant_id,
            "version": tenant.version,
            "yaml": tenant_block_yaml(tenant.tenant_id, tenant.config),
        }
        response = Response(TenantYamlSerializer(body).data)
        response["ETag"] = etag_for(tenant.version)
        return response

    @extend_schema(
        operation_id="tenants_yaml_parse",
        summary="Check a pasted YAML block",
        request=BlockParseRequestSerializer,
        description=(
            "Read a pasted block for this tenant (which need not exist). Syntax and "
            "validation problems are answered in `errors` with their lines (200); "
            "other Cortex limits in `ignored`. A tenant ID Cortex could not send is a "
            "400 naming `tenant_id`. Any role; nothing is written."
        ),
        responses={200: BlockParseSerializer, **errors(400, 413, 415)},
    )
    def post(self, request: Request, tenant_id: str) -> Response:
        check_tenant_id(tenant_id)
        parsed = parse_tenant_block(_yaml_text(request.data))
        problems = [{"path": p.path, "message": p.message, "line": p.line} for p in parsed.problems]
        body = {
            "tenant_id": tenant_id,
            "pasted_tenant": parsed.pasted_tenant,
            "valid": not problems,
            "config": parsed.config,
            "ignored": [{"name": n.name, "line": n.line} for n in parsed.ignored],
            "errors": problems,
            "yaml": "" if parsed.config is None else tenant_block_yaml(tenant_id, parsed.config),
        }
        return Response(BlockParseSerializer(body).data)


def _yaml_text(data: Any) -> str:
    """The `yaml` string of the body; anything else is refused naming the field."""
    if not isinstance(data, dict):
        raise ConfigValidationError([FieldError("(root)", "must be an object with yaml")])
    problems = [FieldError(str(k), "unknown field") for k in data if k != "yaml"]
    text = data.get("yaml")
    if "yaml" not in data:
        problems.append(FieldError("yaml", "required: the block's YAML text"))
    elif not isinstance(text, str):
        problems.append(FieldError("yaml", f"must be a string, got {shown(text)}"))
    if problems:
        raise ConfigValidationError(problems)
    return str(text)


# What `_revision_param` accepts: digits only.
_REVISION_ID = {"type": "integer", "minimum": 0}


def _revision_param(request: Request, name: str, errs: list[FieldError]) -> Any:
    raw = request.query_params.get(name, "")
    if not raw:
        errs.append(FieldError(name, "required: a revision id"))
        return None
    value = parse_decimal(raw)
    if value is None:
        errs.append(FieldError(name, f"must be a revision id, got {raw[:40]!r}"))
    return value


class RevisionCompareView(ApiView):
    """The state after revision `from` against the state after revision `to`."""

    @extend_schema(
        operation_id="revisions_compare",
        summary="Compare two revisions",
        parameters=[
            OpenApiParameter("from", _REVISION_ID, required=True, description="revision id"),
            OpenApiParameter("to", _REVISION_ID, required=True, description="revision id"),
            OpenApiParameter("tenant", OpenApiTypes.STR, description="compare this tenant's block"),
            OpenApiParameter(
                "scope",
                OpenApiTypes.STR,
                enum=list(_SCOPES),
                description=(
                    "settings, overrides (every tenant) or config (tenants and settings); "
                    "default: the scope both revisions changed (one tenant, the settings, "
                    "the tenant set), else config"
                ),
            ),
        ],
        responses={200: CompareSerializer, **errors(400, 404)},
    )
    def get(self, request: Request) -> Response:
        errs: list[FieldError] = []
        first_id = _revision_param(request, "from", errs)
        second_id = _revision_param(request, "to", errs)
        tenant = request.query_params.get("tenant") or None
        kind = request.query_params.get("scope") or None
        if kind is not None and kind not in _SCOPES:
            errs.append(FieldError("scope", f"must be one of {', '.join(_SCOPES)}, got {kind!r}"))
        if tenant is not None:
            # A tenant ID no tenant can have compares nothing: say so, not "no change".
            errs += tenant_id_errors(tenant, "tenant")
        if tenant is not None and kind is not None:
            errs.append(FieldError("scope", "give either tenant or scope, not both"))
        if errs:
            raise ConfigValidationError(errs)
        first = selectors.revision_get(revision_id=first_id)
        second = selectors.revision_get(revision_id=second_id)
        scope = Scope("tenant", tenant) if tenant else Scope(kind) if kind else None
        found = compare_revisions(first, second, scope)
        body = {
            "from": RevisionSerializer(first).data,
            "to": RevisionSerializer(second).data,
            "scope": {"kind": found.scope.kind, "key": found.scope.key, "label": found.scope.label},
            "diff": [{"path": c.path, "before": c.before, "after": c.after} for c in found.diff],
            "yaml_diff": found.yaml_diff,
        }
        return Response(body)
