"""`revisions/`: the config's history, one revision's diff, and rollback."""

from __future__ import annotations

from collections.abc import Mapping

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import exceptions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from api.rest.errors import etag_for
from api.rest.query_params import (
    StrictLimitOffsetPagination,
    bool_parameter,
    choice_param,
    tenant_id_part_param,
    tenant_id_part_parameter,
)
from api.rest.serializers import (
    RevisionDetailSerializer,
    RevisionSerializer,
    RollbackResultSerializer,
)
from api.rest.views.base import ApiView, errors, flag
from api.rest.views.conditional import NamesConflicts, expected_if_given
from api.rest.views.runtime_config import tenant_aware_splitter
from api.store import selectors, services
from api.store.exceptions import ConfigValidationError, NotFound
from api.store.import_plan import tenant_id_errors
from api.store.models import ConfigRevision, Tenant
from api.store.one_version import at_one_version
from api.store.revision_states import revision_comparison, rollback_preview
from scheduler_core.bounds import parse_decimal

REVISION_ID = OpenApiParameter("revision_id", OpenApiTypes.INT, OpenApiParameter.PATH)


def _revision_id(raw: str) -> int:
    value = parse_decimal(raw)
    if value is None:
        raise NotFound(f"no revision {raw[:40]!r}")
    return value


def _note_of(request: Request) -> str:
    """A rollback's body: none, `{}`, or `{"note": "<change note>"}`; the note.

    Anything else is a 400 naming what it held: the body used to go unread,
    so `{"dry_run": true}` sent there (rather than as `?dry_run=1`) rolled
    back for real.
    """
    if request.stream is None:
        return ""
    body = request.data  # the parser's own 400/413/415 first
    refused = 'a rollback takes no body but {"note": "<change note>"}'
    if not isinstance(body, Mapping):
        raise exceptions.ValidationError({"non_field_errors": [refused]})
    problems = {str(key): [f"unknown field: {refused}"] for key in body if key != "note"}
    if "dry_run" in problems:
        problems["dry_run"] = [
            f"unknown field: {refused}; dry_run is a query parameter, ?dry_run=1"
        ]
    note = body.get("note", "")
    if not isinstance(note, str):
        problems["note"] = ["must be text: the change note the new revision's message ends with"]
    elif (problem := services.rollback_note_problem(note)) is not None:
        problems["note"] = [problem]
    if problems:
        raise exceptions.ValidationError(problems)
    return str(note)


def _tenant_ids_of(revision_id: int) -> list[str]:
    """Every tenant ID a rollback of the revision can name: the revision's own
    (its before and after, for an import) and the tenants that exist now."""
    revision = selectors.revision_get(revision_id=revision_id)
    ids = set(Tenant.objects.values_list("tenant_id", flat=True))
    if revision.kind == ConfigRevision.Kind.RUNTIME_CONFIG:
        for state in (revision.before, revision.after):
            ids.update(str(key) for key in state or {})
    return sorted(ids)


__all__ = ["RevisionDetailView", "RevisionListView", "RevisionRollbackView"]


class RevisionPagination(StrictLimitOffsetPagination):
    default_limit = 50
    max_limit = 500


class RevisionListView(ApiView):
    """Revisions, newest first; filter by kind, key (a tenant ID), part of a key, or
    a tenant changed (imports and their rollbacks included)."""

    # Also tells the schema generator that the list is paged.
    pagination_class = RevisionPagination

    @extend_schema(
        operation_id="revisions_list",
        summary="List revisions",
        parameters=[
            OpenApiParameter("kind", OpenApiTypes.STR, enum=list(ConfigRevision.Kind.values)),
            OpenApiParameter("key", OpenApiTypes.STR, description="tenant ID, exactly"),
            tenant_id_part_parameter("search", "part of the tenant ID (`key`), any case"),
            OpenApiParameter(
                "tenant",
                OpenApiTypes.STR,
                description="tenant ID, exactly: the revisions that created, changed or "
                "deleted it, its own writes and the imports (and rollbacks of imports) "
                "that changed it, whose `key` is empty",
            ),
        ],
        responses={200: RevisionSerializer(many=True), **errors(400)},
    )
    def get(self, request: Request) -> Response:
        tenant = request.query_params.get("tenant")
        if tenant is not None and (problems := tenant_id_errors(tenant, "tenant")):
            # An ID no tenant can have was changed by nothing: say so, not "no revisions".
            raise ConfigValidationError(problems)
        revisions = selectors.revision_list(
            kind=choice_param(request, "kind", list(ConfigRevision.Kind.values)),
            key=request.query_params.get("key"),
            search=tenant_id_part_param(request, "search"),
            changed=tenant,
        )
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(revisions, request, view=self)
        return paginator.get_paginated_response(RevisionSerializer(page, many=True).data)


class RevisionDetailView(ApiView):
    """One revision with its before/after and the changed fields."""

    @extend_schema(
        operation_id="revisions_retrieve",
        summary="Get a revision",
        parameters=[REVISION_ID],
        responses={200: RevisionDetailSerializer, **errors(404)},
    )
    def get(self, request: Request, revision_id: str) -> Response:
        revision = selectors.revision_get(revision_id=_revision_id(revision_id))
        revision.diff = [  # type: ignore[attr-defined]
            {"path": c.path, "before": c.before, "after": c.after}
            for c in selectors.revision_diff(revision)
        ]
        revision.yaml_diff = revision_comparison(revision).yaml_diff  # type: ignore[attr-defined]
        return Response(RevisionDetailSerializer(revision).data)


class RevisionRollbackView(NamesConflicts, ApiView):
    """Restore the state from before a revision, as a new revision."""

    conflict_subject = "the config"
    conflict_next = (
        "preview the rollback again (?dry_run=1) and send that answer's ETag as If-Match"
    )

    @extend_schema(
        operation_id="revisions_rollback",
        summary="Roll back a revision",
        parameters=[
            REVISION_ID,
            bool_parameter(
                "dry_run",
                "only say what the rollback would change (`diff`, `yaml_diff`); its ETag "
                "is the config version to send back as If-Match",
            ),
            OpenApiParameter(
                "If-Match",
                OpenApiTypes.STR,
                OpenApiParameter.HEADER,
                description=(
                    "optional: the config version (a dry run's ETag, or the newest "
                    "revision's version) the rollback was reviewed at; 412 if any "
                    "change landed since"
                ),
            ),
        ],
        request=inline_serializer(
            "RollbackNote",
            {
                "note": serializers.CharField(
                    required=False,
                    allow_blank=True,
                    max_length=services.ROLLBACK_NOTE_MAX,
                    help_text="the change note: the new revision's message is \"rollback of "
                    'revision #N: <note>"',
                )
            },
        ),
        responses={
            201: RollbackResultSerializer,
            200: RollbackResultSerializer,
            **errors(400, 404, 412, 413, 415),
        },
    )
    def post(self, request: Request, revision_id: str) -> Response:
        target_id = _revision_id(revision_id)
        note = _note_of(request)
        if flag(request, "dry_run"):
            target = selectors.revision_get(revision_id=target_id)
            version, preview = at_one_version(
                selectors.config_version_get, lambda: rollback_preview(target)
            )
            body = {
                "changed": preview.changed,
                "revision": None,
                "diff": preview.diff,
                "yaml_diff": preview.yaml_diff,
            }
            response = Response(RollbackResultSerializer(body).data)
            response["ETag"] = etag_for(version)
            return response
        try:
            new = services.revision_rollback(
                revision_id=target_id,
                author=request.user,
                expected_config_version=expected_if_given(request, selectors.config_version_get()),
                note=note,
            )
        except ConfigValidationError:
            # A restored import that no longer validates: its errors are
            # `overrides.<tenant>.<field>`, and a tenant ID may hold dots.
            self.error_path_splitter = tenant_aware_splitter(_tenant_ids_of(target_id))
            raise
        body = {"changed": new is not None, "revision": new}
        code = status.HTTP_201_CREATED if new is not None else status.HTTP_200_OK
        response = Response(RollbackResultSerializer(body).data, status=code)
        # The config version now, as every other write answers with its object's.
        response["ETag"] = etag_for(
            new.version if new is not None else selectors.config_version_get()
        )
        return response
