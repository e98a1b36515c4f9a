"""`settings/`: the queue-wide scheduler settings, versioned like a tenant."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from api.rest.errors import etag_for
from api.rest.serializers import SettingsSerializer
from api.rest.views.base import IF_MATCH_REQUIRED, IF_NONE_MATCH, ApiView, body_of, errors
from api.rest.views.conditional import NamesConflicts, expected_for_existing, not_modified
from api.store import selectors, services
from api.store.exceptions import ConfigValidationError
from scheduler_core.errors import FieldError
from scheduler_core.model import QueueConfig
from scheduler_core.validation import (
    queue_config_from_dict,
    queue_config_to_dict,
    validate_queue_settings,
)

__all__ = ["SettingsView"]


def _settings_response(config: dict[str, object], version: int) -> Response:
    response = Response(config)
    response["ETag"] = etag_for(version)
    return response


class SettingsView(NamesConflicts, ApiView):
    """Every setting in canonical form (durations as strings); PATCH any subset."""

    conflict_subject = "the scheduler settings document"
    conflict_next = "GET settings/ again, reapply your change and send its ETag as If-Match"

    @extend_schema(
        operation_id="settings_retrieve",
        summary="Get the scheduler settings",
        parameters=[IF_NONE_MATCH],
        responses={
            200: SettingsSerializer,
            304: OpenApiResponse(description="If-None-Match names the current version"),
            **errors(),
        },
    )
    def get(self, request: Request) -> Response:
        row = selectors.settings_get()
        if not_modified(request, row.version):
            response = Response(status=status.HTTP_304_NOT_MODIFIED)
            response["ETag"] = etag_for(row.version)
            return response
        return _settings_response(queue_config_to_dict(selectors.queue_config_get()), row.version)

    @extend_schema(
        operation_id="settings_patch",
        summary="Change scheduler settings",
        parameters=[IF_MATCH_REQUIRED],
        request=SettingsSerializer,
        responses={200: SettingsSerializer, **errors(400, 412, 413, 415, 428)},
    )
    def patch(self, request: Request) -> Response:
        # The body first: bad settings are a 400 whatever the preconditions say.
        changes = body_of(request, "a JSON object of the settings to change")
        if changes is None:
            # The validator reads a null as "no settings given" (as for an
            # optional section elsewhere); as a whole PATCH body it is a mistake.
            raise ConfigValidationError([FieldError("(root)", "must be a mapping, got null")])
        errors_found = validate_queue_settings(changes, selectors.queue_config_get())
        if errors_found:
            raise ConfigValidationError(errors_found)
        current = selectors.settings_get().version
        row = services.settings_update(
            changes=changes,
            expected_version=expected_for_existing(request, current),
            author=request.user,
            source=self.source,
        )
        config = queue_config_to_dict(queue_config_from_dict(row.config, QueueConfig()))
        return _settings_response(config, row.version)
