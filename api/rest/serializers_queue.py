"""Shapes of the queue-requests endpoints (`queue/requests/`, `queue/cancel/`), for the schema.

Input is validated by `api.wire.queue_rows.RequestFilter.parse` (the same
rules for the query string, the cancel body and the inspector), so these
serializers describe bodies for the OpenAPI schema and are not used to
validate.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema_field
from rest_framework import serializers

from api.wire.queue_rows import QUERY_TEXT_LIMIT
from scheduler_core.model import COMPONENTS

__all__ = [
    "FILTER_PARAMETERS",
    "CancelByFilterSerializer",
    "CancelCountsSerializer",
    "CancelOneSerializer",
    "QueueRequestDetailSerializer",
    "QueueRequestPageSerializer",
    "QueueRequestSerializer",
]


class RuleSerializer(serializers.Serializer):  # type: ignore[type-arg]
    priority_index = serializers.IntegerField()
    attribute_index = serializers.IntegerField()


class FrontendSerializer(serializers.Serializer):  # type: ignore[type-arg]
    transport = serializers.ChoiceField(choices=["websocket", "grpc", "internal"])
    address = serializers.CharField()
    name = serializers.CharField(help_text="token name (websocket) or certificate CN (gRPC)")


class QueueRequestSerializer(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.CharField(help_text="the scheduler's request id, as queriers receive it")
    client_id = serializers.JSONField(
        allow_null=True, help_text="the frontend's own id: websocket `id` or Cortex `queryID`"
    )
    tenant = serializers.CharField()
    component = serializers.ChoiceField(choices=list(COMPONENTS))
    priority = serializers.IntegerField()
    rule = RuleSerializer(allow_null=True, help_text="the priority rule that matched, or null")
    source = serializers.ChoiceField(choices=["rule", "default", "disabled"])
    query = serializers.CharField(help_text=f"the query text, cut at {QUERY_TEXT_LIMIT} characters")
    query_truncated = serializers.BooleanField()
    api_type = serializers.CharField()
    start = serializers.FloatField(allow_null=True, help_text="unix seconds")
    end = serializers.FloatField(allow_null=True, help_text="unix seconds")
    step = serializers.FloatField(allow_null=True, help_text="seconds")
    state = serializers.ChoiceField(choices=["queued", "in_flight"])
    wait_seconds = serializers.FloatField(help_text="queued so far, or until dispatched")
    attempts = serializers.IntegerField(help_text="times handed to a querier (2: a retry)")
    querier = serializers.CharField(allow_null=True)
    worker = serializers.IntegerField(allow_null=True)
    running_seconds = serializers.FloatField(allow_null=True)
    frontend = FrontendSerializer()
    replica = serializers.CharField()
    actor = serializers.CharField(
        allow_blank=True, help_text='the actor sub-queue it waits in ("users|joe"), or ""'
    )


class QueueRequestDetailSerializer(QueueRequestSerializer):
    """One request's row, with what explaining it needs beyond the listing's row."""

    headers = serializers.DictField(
        child=serializers.CharField(),
        help_text="the headers rules read (User-Agent, X-Dashboard-Uid, X-Panel-Id), "
        "those sent non-empty; no other header is listed",
    )
    matchers = serializers.ListField(
        child=serializers.CharField(),
        allow_null=True,
        help_text="a gRPC metadata call's match[] selectors, each on its own; null for "
        "query/query_range and for a websocket request (its query is one selector)",
    )


class ReservedWorkersSerializer(serializers.Serializer):  # type: ignore[type-arg]
    idle = serializers.IntegerField()
    connected = serializers.IntegerField()


class ServingSerializer(serializers.Serializer):  # type: ignore[type-arg]
    shard = serializers.ListField(
        child=serializers.CharField(),
        allow_null=True,
        help_text="its shuffle shard's queriers; null: every querier may serve it",
    )
    queriers = serializers.IntegerField(help_text="queriers the shards are drawn from")
    reserved = serializers.ListField(
        child=serializers.JSONField(),
        help_text="[priority, [queriers]], highest first: each takes only the tenant's "
        "requests of that priority or higher (Cortex's reserved_queriers)",
    )
    reserved_workers = ReservedWorkersSerializer(
        required=False,
        help_text="live answers only: the reserved queriers' worker connections, and how many "
        "have no request now",
    )


class QueueRequestPageSerializer(serializers.Serializer):  # type: ignore[type-arg]
    running = serializers.BooleanField()
    results = QueueRequestSerializer(many=True)
    next = serializers.CharField(allow_null=True, help_text="pass back as cursor=")
    total = serializers.IntegerField(help_text="matching requests")
    replicas = serializers.ListField(child=serializers.CharField(), required=False)
    replicas_missing = serializers.ListField(child=serializers.CharField(), required=False)
    replicas_note = serializers.CharField(
        required=False, help_text="scale-out: set while this replica has not heard of its peers"
    )
    serving = ServingSerializer(
        required=False, help_text="with tenant=: which queriers may serve that tenant"
    )


class CancelOneSerializer(serializers.Serializer):  # type: ignore[type-arg]
    note = serializers.CharField(required=False, allow_blank=True, max_length=500)
    replica = serializers.CharField(
        required=False, help_text="scale-out: only on this replica (ids may repeat across them)"
    )


@extend_schema_field(
    {
        "oneOf": [
            {"type": "number", "minimum": 0},
            {"type": "string", "format": "date-time"},
        ],
        "example": 1754400000.123456,
    }
)
class InstantField(serializers.Field):  # type: ignore[type-arg]
    """Unix seconds, or RFC 3339 with a zone (`queue_filter_params` reads it)."""

    def to_representation(self, value: Any) -> Any:
        return value


class CancelByFilterSerializer(serializers.Serializer):  # type: ignore[type-arg]
    tenant = serializers.CharField(required=False)
    component = serializers.ChoiceField(choices=list(COMPONENTS), required=False)
    priority = serializers.IntegerField(required=False)
    search = serializers.CharField(required=False, help_text="query substring (any case)")
    regex = serializers.CharField(required=False, help_text="RE2, unanchored, on the query")
    state = serializers.ChoiceField(choices=["queued"], required=False)
    min_wait = serializers.FloatField(
        required=False, min_value=0, help_text="only requests queued at least this many seconds"
    )
    frontend = serializers.CharField(
        required=False, help_text="substring of the frontend's transport, address or name"
    )
    actor = serializers.CharField(
        required=False, help_text='an actor path ("users|joe"): its sub-queue and below'
    )
    enqueued_before = InstantField(
        required=False,
        help_text="only requests enqueued at or before this instant: send a dry run's `as_of` "
        "to cancel no request that arrived after that count",
    )
    note = serializers.CharField(required=False, allow_blank=True, max_length=500)
    dry_run = serializers.BooleanField(required=False, default=False)


class CancelCountsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    matched = serializers.IntegerField()
    cancelled = serializers.IntegerField()
    as_of = serializers.FloatField(
        required=False,
        help_text="dry runs: the instant counted at (unix seconds, to the microsecond); "
        "`matched` counts the requests enqueued by then",
    )
    replicas = serializers.ListField(child=serializers.CharField(), required=False)
    replicas_missing = serializers.ListField(child=serializers.CharField(), required=False)
    replicas_note = serializers.CharField(
        required=False,
        help_text="scale-out: set while this replica has not heard of its peers (only its "
        "own requests were cancelled)",
    )


def _filter_param(name: str, kind: Any, description: str, **extra: Any) -> OpenApiParameter:
    return OpenApiParameter(name, kind, description=description, **extra)


# `GET queue/requests/`'s filter in the query string: the fields of
# `CancelByFilterSerializer`, which a cancel takes in its body.
FILTER_PARAMETERS = [
    _filter_param("tenant", OpenApiTypes.STR, "the tenant's requests only"),
    _filter_param("component", OpenApiTypes.STR, "one query component", enum=list(COMPONENTS)),
    _filter_param("priority", OpenApiTypes.INT, "one priority band"),
    _filter_param(
        "state",
        OpenApiTypes.STR,
        "queued or in_flight; without it queued rows come first, then running ones",
        enum=["queued", "in_flight"],
    ),
    _filter_param("search", OpenApiTypes.STR, "substring of the query text (any case)"),
    _filter_param("regex", OpenApiTypes.STR, "RE2 regex searched in the query text (unanchored)"),
    OpenApiParameter(
        "min_wait",
        {"type": "number", "minimum": 0},
        OpenApiParameter.QUERY,
        description="only requests queued at least this many seconds",
    ),
    _filter_param(
        "frontend", OpenApiTypes.STR, "substring of the frontend's transport, address or name"
    ),
    _filter_param(
        "actor", OpenApiTypes.STR, 'an actor path ("users|joe"): its sub-queue and below'
    ),
    _filter_param(
        "enqueued_before",
        OpenApiTypes.STR,
        "only requests enqueued at or before this instant: unix seconds (a dry run's `as_of`) "
        "or RFC 3339 with a zone",
    ),
]
