"""Shapes of the REST API's bodies, for the OpenAPI schema and for output.

Tenant blocks and scheduler settings are validated only by
`scheduler_core.validation` (through the services), never here: the tenant
serializers below describe Cortex's per-tenant override block for the schema
and are not used to validate input, so the browser, the API and YAML share
one set of rules. Fields are nullable where the validator treats null as
"unset", because a stored block is returned exactly as it was written.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from scheduler_core.bounds import (
    INT64_MAX,
    INT64_MIN,
    MAX_DURATION_SECONDS,
    MAX_DURATION_TEXT,
    MAX_TENANT_ID_LENGTH,
    MAX_TIMESTAMP,
    MIN_TIMESTAMP,
    request_times_error,
    timestamp_error,
)
from scheduler_core.model import API_TYPES, COMPONENTS
from scheduler_core.validation import InvalidDuration, parse_duration

__all__ = [
    "DurationField",
    "ExplainRequestSerializer",
    "ExplainResponseSerializer",
    "FrontendRowSerializer",
    "DryRunReportSerializer",
    "ImportResultSerializer",
    "QueriersSnapshotSerializer",
    "QueueSnapshotSerializer",
    "RevisionDetailSerializer",
    "RevisionSerializer",
    "RollbackResultSerializer",
    "RuleStatsSerializer",
    "SettingsSerializer",
    "TenantConfigSerializer",
    "TenantListItemSerializer",
]

# Prometheus' duration grammar (at least one unit); the total must also fit
# Go's time.Duration (MAX_DURATION_TEXT), which a pattern cannot say.
DURATION_PATTERN = (
    r"^(?=[0-9])([0-9]+y)?([0-9]+w)?([0-9]+d)?([0-9]+h)?([0-9]+m)?([0-9]+s)?([0-9]+ms)?$"
)
_DURATION_ONE_OF: list[dict[str, Any]] = [
    {
        "type": "string",
        "pattern": DURATION_PATTERN,
        "example": "2h",
        "description": f"Prometheus duration, at most {MAX_DURATION_TEXT}",
    },
    {"type": "number", "minimum": 0, "maximum": MAX_DURATION_SECONDS, "description": "seconds"},
]
_DURATION_SCHEMA: dict[str, Any] = {"oneOf": _DURATION_ONE_OF, "nullable": True}


@extend_schema_field(_DURATION_SCHEMA)
class DurationField(serializers.Field):  # type: ignore[type-arg]
    """A Prometheus duration string (`2h`, `1h30m`) or a number of seconds."""

    def to_representation(self, value: Any) -> Any:
        return value

    def to_internal_value(self, data: Any) -> Any:
        return data


@extend_schema_field({"oneOf": _DURATION_ONE_OF})
class SettingDurationField(DurationField):
    """A duration setting: unlike a tenant field, null is not "unset" here."""


@extend_schema_field(
    {"oneOf": [{"type": "string"}, {"type": "integer"}], "nullable": True, "example": "4"}
)
class PanelIdField(DurationField):
    """Grafana's panel id: YAML gives it as a number, headers as a string."""


class TimeWindowSerializer(serializers.Serializer):  # type: ignore[type-arg]
    start = DurationField(required=False, help_text="all data newer than now-start")
    end = DurationField(required=False, help_text="all data older than now-end")


class MinMaxSerializer(serializers.Serializer):  # type: ignore[type-arg]
    min = DurationField(required=False)
    max = DurationField(required=False)


class QueryAttributeSerializer(serializers.Serializer):  # type: ignore[type-arg]
    regex = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    time_window = TimeWindowSerializer(required=False, allow_null=True)
    api_type = serializers.ChoiceField(
        choices=[*API_TYPES, ""], required=False, allow_null=True, allow_blank=True
    )
    time_range_limit = MinMaxSerializer(required=False, allow_null=True)
    query_step_limit = MinMaxSerializer(required=False, allow_null=True)
    user_agent_regex = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    dashboard_uid = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    panel_id = PanelIdField(required=False)


class PriorityDefSerializer(serializers.Serializer):  # type: ignore[type-arg]
    priority = serializers.IntegerField(min_value=INT64_MIN, max_value=INT64_MAX)
    reserved_queriers = serializers.FloatField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=INT64_MAX,
        help_text=">= 1: a count; below 1: a share",
    )
    query_attributes = QueryAttributeSerializer(many=True, min_length=1)


class QueryPrioritySerializer(serializers.Serializer):  # type: ignore[type-arg]
    enabled = serializers.BooleanField(required=False)
    default_priority = serializers.IntegerField(
        required=False, min_value=INT64_MIN, max_value=INT64_MAX
    )
    priorities = PriorityDefSerializer(many=True, required=False, allow_null=True)


class QueryRejectionSerializer(serializers.Serializer):  # type: ignore[type-arg]
    enabled = serializers.BooleanField(required=False, help_text="false keeps the rules unapplied")
    query_attributes = QueryAttributeSerializer(
        many=True, required=False, help_text="a request matching any of them gets HTTP 422"
    )


class TenantConfigSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """One tenant's block of Cortex's runtime-config `overrides`."""

    max_queriers_per_tenant = serializers.IntegerField(
        required=False, min_value=0, max_value=INT64_MAX
    )
    max_outstanding_requests_per_tenant = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=INT64_MAX
    )
    query_priority = QueryPrioritySerializer(required=False, allow_null=True)
    query_rejection = QueryRejectionSerializer(required=False, allow_null=True)
    max_query_capacity = serializers.FloatField(
        required=False,
        min_value=0,
        max_value=1,
        help_text="Loki's limit: the share of queriers the tenant may use (0 = no cap); "
        "with max_queriers_per_tenant the smaller shard wins",
    )


@extend_schema_field(TenantConfigSerializer)
class TenantBlockField(serializers.JSONField):
    """A tenant block passed through untouched (the validator judges it, not DRF)."""


class TenantListItemSerializer(serializers.Serializer):  # type: ignore[type-arg]
    tenant_id = serializers.CharField()
    version = serializers.IntegerField(help_text="the ETag value (unquoted)")
    updated_at = serializers.DateTimeField()
    config = TenantBlockField()


class SettingsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """Queue-wide scheduler settings; PATCH sends any subset."""

    layout = serializers.ChoiceField(choices=["tenant-first", "component-first"], required=False)
    component_selection = serializers.ChoiceField(
        choices=["round-robin", "querier-worker-priority"], required=False
    )
    max_outstanding_requests_per_tenant = serializers.IntegerField(
        required=False, min_value=1, max_value=INT64_MAX
    )
    querier_forget_delay = SettingDurationField(required=False)
    priority_aging = SettingDurationField(required=False, help_text="0s disables aging")
    query_ingesters_within = SettingDurationField(required=False)
    query_store_after = SettingDurationField(
        required=False, help_text="must be less than query_ingesters_within"
    )
    max_queue_hierarchy_levels = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=10,
        help_text="Loki's setting: levels of an actor path that make sub-queues (0 = off)",
    )
    actor_path_header = serializers.CharField(
        required=False, help_text='the request header with the actor path, "|" between levels'
    )
    stuck_threshold = SettingDurationField(
        required=False, help_text="the inspector marks nodes whose oldest request waited longer"
    )


@extend_schema_field(
    {
        "oneOf": [
            {"type": "number", "minimum": MIN_TIMESTAMP, "maximum": MAX_TIMESTAMP},
            {"type": "string", "format": "date-time"},
        ],
        "nullable": True,
        "example": 1700000000,
    }
)
class TimestampField(serializers.Field):  # type: ignore[type-arg]
    """Unix seconds or RFC 3339, as the Prometheus HTTP API accepts; gives seconds."""

    def to_representation(self, value: Any) -> Any:
        return value

    def to_internal_value(self, data: Any) -> float | None:
        if data is None:
            return None
        if isinstance(data, str):
            try:
                return _finite(float(data))
            except ValueError:
                pass
            try:
                return datetime.fromisoformat(data.replace("Z", "+00:00")).timestamp()
            except ValueError:
                self.fail("invalid")
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return _finite(data)

    default_error_messages = {"invalid": "must be unix seconds or an RFC 3339 time"}


class StepField(DurationField):
    """A step as a Prometheus duration or seconds; gives seconds."""

    def to_internal_value(self, data: Any) -> float | None:
        if data is None:
            return None
        try:
            seconds = parse_duration(data)
        except InvalidDuration as exc:
            raise serializers.ValidationError(str(exc)) from exc
        if seconds < 0:
            raise serializers.ValidationError("must not be negative")
        return seconds


def _finite(value: float) -> float:
    """Unix seconds Prometheus' API accepts (an int of any size is compared exactly)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise serializers.ValidationError("must be a finite number")
    problem = timestamp_error(value)
    if problem is not None:
        raise serializers.ValidationError(problem)
    return float(value)


class ExplainRequestSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """One request to explain; unknown fields are errors, as in tenant blocks."""

    tenant = serializers.CharField(min_length=1, max_length=MAX_TENANT_ID_LENGTH)
    query = serializers.CharField(required=False, allow_blank=True, default="", max_length=65536)
    api_type = serializers.ChoiceField(choices=list(API_TYPES), default="query")
    start = TimestampField(required=False, default=None)
    end = TimestampField(required=False, default=None)
    step = StepField(required=False, default=None)
    headers = serializers.DictField(
        child=serializers.CharField(allow_blank=True, max_length=4096), default=dict
    )
    now = TimestampField(required=False, default=None, help_text="evaluate as of; default now")
    tenant_config = TenantBlockField(
        required=False, default=None, allow_null=True, help_text="explain against a draft block"
    )

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            unknown = sorted(str(key) for key in data if key not in self.fields)
            if unknown:
                raise serializers.ValidationError({key: ["unknown field"] for key in unknown})
        return super().to_internal_value(data)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # The check enqueue makes on both protocols, so explain never answers
        # for a request the scheduler would refuse (start after end, a zero step).
        problem = request_times_error(attrs.get("start"), attrs.get("end"), attrs.get("step"))
        if problem is not None:
            raise serializers.ValidationError({problem.field: [problem.message]})
        return attrs


class ReasonSerializer(serializers.Serializer):  # type: ignore[type-arg]
    rule_index = serializers.IntegerField(allow_null=True)
    attribute_index = serializers.IntegerField(allow_null=True)
    field = serializers.CharField()
    matched = serializers.BooleanField()
    message = serializers.CharField()


class RuleVerdictSerializer(serializers.Serializer):  # type: ignore[type-arg]
    rule_index = serializers.IntegerField()
    priority = serializers.IntegerField()
    matched = serializers.BooleanField()
    evaluated = serializers.BooleanField(help_text="false: a rule before it matched first")
    reasons = ReasonSerializer(many=True)


class SelectRangeSerializer(serializers.Serializer):  # type: ignore[type-arg]
    start = serializers.FloatField()
    end = serializers.FloatField()


class QuerierShareSerializer(serializers.Serializer):  # type: ignore[type-arg]
    max_queriers_per_tenant = serializers.IntegerField()
    max_query_capacity = serializers.FloatField()
    known = serializers.IntegerField(
        allow_null=True, help_text="queriers this replica's shards are drawn from"
    )
    may_use = serializers.IntegerField(allow_null=True)
    decided_by = serializers.ChoiceField(
        choices=["max_queriers_per_tenant", "max_query_capacity"], allow_null=True
    )
    summary = serializers.CharField(help_text='e.g. "this tenant may use 3 of 10 queriers"')


class ActorPlacementSerializer(serializers.Serializer):  # type: ignore[type-arg]
    header = serializers.CharField(help_text="the settings' actor_path_header")
    path = serializers.ListField(child=serializers.CharField(), help_text="as the header names it")
    placed = serializers.ListField(
        child=serializers.CharField(),
        help_text="the sub-queue it would wait in ([]: the leaf's own)",
    )
    max_queue_hierarchy_levels = serializers.IntegerField()
    summary = serializers.CharField()


class ExplainResponseSerializer(serializers.Serializer):  # type: ignore[type-arg]
    tenant = serializers.CharField()
    tenant_configured = serializers.BooleanField()
    now = serializers.FloatField()
    component = serializers.ChoiceField(choices=list(COMPONENTS))
    select_range = SelectRangeSerializer(allow_null=True)
    priority = serializers.IntegerField()
    source = serializers.ChoiceField(choices=["disabled", "default", "rule"])
    rule_index = serializers.IntegerField(allow_null=True)
    attribute_index = serializers.IntegerField(allow_null=True)
    rules = RuleVerdictSerializer(many=True)
    reasons = ReasonSerializer(many=True)
    rejected_by = serializers.IntegerField(
        allow_null=True,
        help_text="index of the query_rejection attribute that rejects the request (422)",
    )
    rejection_reasons = ReasonSerializer(
        many=True, help_text="why each rejection attribute did (not) match"
    )
    queriers = QuerierShareSerializer()
    actor = ActorPlacementSerializer()


class ActorRowSerializer(serializers.Serializer):  # type: ignore[type-arg]
    path = serializers.ListField(
        child=serializers.CharField(allow_blank=True),
        help_text='actor path below the leaf; an "others" row ends in ""',
    )
    length = serializers.IntegerField()
    oldest_wait_seconds = serializers.FloatField()
    others = serializers.IntegerField(help_text="> 0: this many more sub-queues summed here")


class LeafRowSerializer(serializers.Serializer):  # type: ignore[type-arg]
    component = serializers.CharField()
    length = serializers.IntegerField()
    by_priority = serializers.DictField(child=serializers.IntegerField())
    oldest_wait_seconds = serializers.FloatField()
    actors = ActorRowSerializer(many=True)


class TenantRowSerializer(serializers.Serializer):  # type: ignore[type-arg]
    tenant_id = serializers.CharField()
    length = serializers.IntegerField()
    max_outstanding = serializers.IntegerField()
    shard = serializers.ListField(child=serializers.CharField(), allow_null=True)
    priority_enabled = serializers.BooleanField()
    reservations = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))
    components = LeafRowSerializer(many=True)


class OthersSerializer(serializers.Serializer):  # type: ignore[type-arg]
    tenants = serializers.IntegerField()
    length = serializers.IntegerField()
    by_component = serializers.DictField(child=serializers.IntegerField())


class ReplicasSerializer(serializers.Serializer):  # type: ignore[type-arg]
    count = serializers.IntegerField()
    ids = serializers.ListField(child=serializers.CharField())
    peers_max_age = serializers.FloatField(help_text="seconds since the oldest peer summary")
    note = serializers.CharField()


class QueueSnapshotSerializer(serializers.Serializer):  # type: ignore[type-arg]
    running = serializers.BooleanField()
    taken_at = serializers.FloatField(allow_null=True)
    layout = serializers.CharField()
    component_selection = serializers.CharField()
    total = serializers.IntegerField()
    by_component = serializers.DictField(child=serializers.IntegerField())
    tenant_count = serializers.IntegerField(help_text="tenants matching the filter")
    tenants = TenantRowSerializer(many=True)
    others = OthersSerializer()
    replicas = ReplicasSerializer(required=False, help_text="only when peer replicas publish")


class WorkerRowSerializer(serializers.Serializer):  # type: ignore[type-arg]
    worker_id = serializers.IntegerField()
    state = serializers.ChoiceField(choices=["busy", "idle", "waiting"])
    request_id = serializers.CharField(allow_null=True)
    tenant_id = serializers.CharField(allow_null=True)
    component = serializers.CharField(allow_null=True)
    priority = serializers.IntegerField(allow_null=True)
    seconds_in_state = serializers.FloatField()


class ReservationRowSerializer(serializers.Serializer):  # type: ignore[type-arg]
    tenant_id = serializers.CharField()
    priority = serializers.IntegerField()


class QuerierRowSerializer(serializers.Serializer):  # type: ignore[type-arg]
    querier_id = serializers.CharField()
    replica = serializers.CharField(required=False, help_text="the replica of this connection")
    connected = serializers.BooleanField()
    shutting_down = serializers.BooleanField()
    reserved_idle = serializers.BooleanField()
    busy_workers = serializers.IntegerField()
    reservations = ReservationRowSerializer(many=True)
    workers = WorkerRowSerializer(many=True)


class FrontendRowSerializer(serializers.Serializer):  # type: ignore[type-arg]
    transport = serializers.ChoiceField(choices=["websocket", "grpc"])
    address = serializers.CharField()
    name = serializers.CharField(
        allow_blank=True,
        help_text="token name (websocket), or client certificate common name (gRPC, mutual TLS)",
    )
    streams = serializers.IntegerField()
    outstanding = serializers.IntegerField(help_text="its requests queued or in flight")
    connected_for = serializers.FloatField(allow_null=True, help_text="seconds")
    replica = serializers.CharField(
        required=False, help_text="the replica it is connected to (only with peer replicas)"
    )


class QueriersSnapshotSerializer(serializers.Serializer):  # type: ignore[type-arg]
    running = serializers.BooleanField()
    taken_at = serializers.FloatField(allow_null=True)
    count = serializers.IntegerField()
    reserved_idle = serializers.ListField(child=serializers.CharField())
    queriers = QuerierRowSerializer(many=True)
    frontends = FrontendRowSerializer(
        many=True,
        help_text=(
            "connected to this replica; with peer replicas also each peer's top 50 "
            "by outstanding, every row naming its replica"
        ),
    )
    frontends_missing = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="live peer replicas that publish no frontends (only with peer replicas)",
    )
    replicas = ReplicasSerializer(required=False, help_text="only when peer replicas publish")


class ChangeSerializer(serializers.Serializer):  # type: ignore[type-arg]
    path = serializers.CharField()
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)


class WindowCountsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    five_minutes = serializers.IntegerField(help_text="last 5 minutes (key: 5m)")
    one_hour = serializers.IntegerField(help_text="last hour (key: 1h)")
    version = serializers.IntegerField(help_text="since the tenant's current version")

    def get_fields(self) -> dict[str, Any]:
        fields = super().get_fields()
        # The JSON keys are "5m" and "1h", which are not Python names.
        return {"5m": fields.pop("five_minutes"), "1h": fields.pop("one_hour"), **fields}


class AttributeHitsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    index = serializers.IntegerField()
    matched = WindowCountsSerializer()


class RuleHitsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    index = serializers.IntegerField()
    priority = serializers.IntegerField()
    matched = WindowCountsSerializer()
    attributes = AttributeHitsSerializer(many=True)


class DefaultHitsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    matched = WindowCountsSerializer()


class RejectionHitsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    index = serializers.IntegerField()
    rejected = WindowCountsSerializer()


class ReplicaHitsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    replica = serializers.CharField()
    current = serializers.BooleanField(help_text="counting under the tenant's current config")
    total = WindowCountsSerializer()


class RuleStatsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    tenant = serializers.CharField()
    version = serializers.IntegerField(allow_null=True)
    priorities = RuleHitsSerializer(many=True)
    default = DefaultHitsSerializer()
    rejection = RejectionHitsSerializer(many=True)
    total = WindowCountsSerializer()
    replicas = ReplicaHitsSerializer(many=True)


class PriorityChangeSerializer(serializers.Serializer):  # type: ignore[type-arg]
    # "from"/"to" are Python keywords: declared under other names, renamed below.
    was = serializers.JSONField(help_text='current priority, or "rejected"')
    becomes = serializers.JSONField(help_text="the draft's priority")
    count = serializers.IntegerField()
    examples = serializers.ListField(child=serializers.CharField())

    def get_fields(self) -> dict[str, Any]:
        fields = super().get_fields()
        return {"from": fields.pop("was"), "to": fields.pop("becomes"), **fields}


class ReservationsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    before = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="priority -> queriers reserved for it now",
    )
    after = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))


class DryRunReportSerializer(serializers.Serializer):  # type: ignore[type-arg]
    sample = serializers.IntegerField(help_text="sampled recent requests replayed")
    unchanged = serializers.IntegerField()
    changed = PriorityChangeSerializer(many=True)
    rejected = serializers.IntegerField(help_text="requests the draft would reject (422)")
    reservations = ReservationsSerializer()


class ImportResultSerializer(serializers.Serializer):  # type: ignore[type-arg]
    dry_run = serializers.BooleanField()
    applied = serializers.BooleanField()
    created = serializers.ListField(child=serializers.CharField())
    changed = serializers.ListField(child=serializers.CharField())
    deleted = serializers.ListField(child=serializers.CharField())
    unchanged = serializers.ListField(child=serializers.CharField())
    ignored = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="per tenant, the fields the scheduler does not use",
    )
    ignored_top_level = serializers.ListField(child=serializers.CharField())
    diffs = serializers.DictField(child=ChangeSerializer(many=True))
    version = serializers.IntegerField(allow_null=True)
    revision_id = serializers.IntegerField(allow_null=True)
    traffic = serializers.DictField(
        child=DryRunReportSerializer(),
        required=False,
        help_text="dry run only: per sampled tenant, its recent traffic replayed",
    )


class RevisionSerializer(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    version = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    author = serializers.CharField(source="author_name")
    source = serializers.CharField()
    kind = serializers.CharField()
    key = serializers.CharField()
    message = serializers.CharField()


class RevisionDetailSerializer(RevisionSerializer):
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)
    diff = ChangeSerializer(many=True)
    yaml_diff = serializers.CharField(
        help_text="unified diff of the YAML before and after (a tenant's block as under "
        "overrides:, the settings, or the import's overrides:); empty when equal"
    )


class RollbackResultSerializer(serializers.Serializer):  # type: ignore[type-arg]
    changed = serializers.BooleanField()
    revision = RevisionSerializer(allow_null=True)
