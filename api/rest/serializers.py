"""Shapes of the REST API's bodies, for the OpenAPI schema and for output.

Here: durations, tenant blocks, scheduler settings, rule statistics, dry
runs, imports and revisions. `serializers_explain` shapes `explain/`,
`serializers_snapshot` the queue and querier snapshots, `serializers_queue`
the queue's requests, `serializers_simulate` the what-if runs and
`serializers_yaml` the YAML bodies.

Tenant blocks and scheduler settings are validated only by
`scheduler_core.validation` (through the services), never here: the tenant
serializers below describe Cortex's per-tenant override block for the schema
and are not used to validate input, so the browser, the API and YAML share
one set of rules. Fields are nullable where the validator treats null as
"unset", because a stored block is returned exactly as it was written.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.rest.serializers_queue import ServingSerializer
from scheduler_core.bounds import (
    INT64_MAX,
    INT64_MIN,
    MAX_DURATION_SECONDS,
    MAX_DURATION_TEXT,
)
from scheduler_core.model import API_TYPES, COMPONENT_SELECTIONS, LAYOUTS

__all__ = [
    "DurationField",
    "DryRunReportSerializer",
    "ImportResultSerializer",
    "RevisionDetailSerializer",
    "RevisionSerializer",
    "RollbackResultSerializer",
    "RuleStatsSerializer",
    "SettingsSerializer",
    "TenantConfigSerializer",
    "TenantBlockField",
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
    enabled = serializers.BooleanField(required=False, allow_null=True)
    default_priority = serializers.IntegerField(
        required=False, allow_null=True, min_value=INT64_MIN, max_value=INT64_MAX
    )
    priorities = PriorityDefSerializer(many=True, required=False, allow_null=True)


class QueryRejectionSerializer(serializers.Serializer):  # type: ignore[type-arg]
    enabled = serializers.BooleanField(
        required=False, allow_null=True, help_text="false keeps the rules unapplied"
    )
    query_attributes = QueryAttributeSerializer(
        many=True,
        required=False,
        allow_null=True,
        help_text="a request matching any of them gets HTTP 422",
    )


class TenantConfigSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """One tenant's block of Cortex's runtime-config `overrides`; a null is the
    field unset (its default), as Cortex's loader reads it, and is not stored."""

    max_queriers_per_tenant = serializers.IntegerField(
        required=False, allow_null=True, min_value=0, max_value=INT64_MAX
    )
    max_outstanding_requests_per_tenant = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=INT64_MAX
    )
    query_priority = QueryPrioritySerializer(required=False, allow_null=True)
    query_rejection = QueryRejectionSerializer(required=False, allow_null=True)
    max_query_capacity = serializers.FloatField(
        required=False,
        allow_null=True,
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

    layout = serializers.ChoiceField(choices=LAYOUTS, required=False)
    component_selection = serializers.ChoiceField(choices=COMPONENT_SELECTIONS, required=False)
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
    max_federated_tenants = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=INT64_MAX,
        help_text="tenants one federated org ID a|b|... may name (0 = no limit)",
    )


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
    counting_seconds = serializers.FloatField(
        allow_null=True,
        help_text="how long this replica has counted under its config (a restarted one: "
        "since its restart)",
    )
    total = WindowCountsSerializer()


class FederatedHitsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    org_id = serializers.CharField(help_text="a federated org ID naming this tenant (a|b)")
    total = WindowCountsSerializer()
    priority_rules_of = serializers.CharField(
        allow_null=True,
        help_text="the tenant whose priority rules judged its requests; null: none enabled",
    )


class RuleStatsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    tenant = serializers.CharField()
    version = serializers.IntegerField(allow_null=True)
    priorities = RuleHitsSerializer(many=True)
    default = DefaultHitsSerializer()
    rejection = RejectionHitsSerializer(many=True)
    total = WindowCountsSerializer()
    counting_seconds = serializers.FloatField(
        allow_null=True,
        help_text="how long the longest-counting replica has counted under this config "
        "(the span the windows cover; null: no replica counting, or none says)",
    )
    replicas = ReplicaHitsSerializer(many=True)
    replicas_missing = serializers.ListField(
        child=serializers.CharField(),
        help_text="known peer replicas whose counts are not in the sums (hung, killed, not "
        "read yet, or every one while Redis is unreachable)",
    )
    replicas_note = serializers.CharField(
        required=False, help_text="set when the peers' counts could not be read at all"
    )
    federated = FederatedHitsSerializer(
        many=True, help_text="federated org IDs naming the tenant, counted above"
    )


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


class DryRunAdmittedSerializer(serializers.Serializer):  # type: ignore[type-arg]
    before = serializers.DictField(
        child=serializers.IntegerField(), help_text="priority (as text) -> requests, saved config"
    )
    after = serializers.DictField(
        child=serializers.IntegerField(), help_text="priority (as text) -> requests, the draft"
    )


class DryRunServingSerializer(serializers.Serializer):  # type: ignore[type-arg]
    before = ServingSerializer()
    after = ServingSerializer()


class FederatedDryRunSerializer(serializers.Serializer):  # type: ignore[type-arg]
    org_id = serializers.CharField(help_text="a federated org ID naming this tenant (a|b)")
    sample = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    changed = PriorityChangeSerializer(many=True)
    rejected = serializers.IntegerField()
    by_priority = DryRunAdmittedSerializer()
    serving = DryRunServingSerializer(
        help_text="who may serve this org ID's own queue now and with the draft in the "
        "tenant's place: the shard and reserved queriers of its tenants' combined limits"
    )


class DryRunReportSerializer(serializers.Serializer):  # type: ignore[type-arg]
    sample = serializers.IntegerField(help_text="sampled recent requests replayed")
    unchanged = serializers.IntegerField()
    changed = PriorityChangeSerializer(many=True)
    rejected = serializers.IntegerField(help_text="requests the draft would reject (422)")
    by_priority = DryRunAdmittedSerializer(
        help_text="sampled requests each config admits, by the priority it gives them"
    )
    reservations = ReservationsSerializer()
    serving = DryRunServingSerializer(
        help_text="who may serve the tenant's own queue now and with the draft, as "
        "queue/requests/ says (each federated ID's queue: its row's serving)"
    )
    federated = FederatedDryRunSerializer(
        many=True,
        help_text="requests of federated org IDs naming the tenant, counted above, by ID",
    )
    replica = serializers.CharField(help_text="the replica whose sample was replayed")
    other_replicas = serializers.ListField(
        child=serializers.CharField(),
        help_text="peer replicas whose traffic is not in the sample",
    )
    replicas_note = serializers.CharField(
        required=False,
        help_text="set while this replica has not heard of its peers: they may hold more traffic",
    )


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
    diff = ChangeSerializer(
        many=True, required=False, help_text="dry run: the fields the rollback would change"
    )
    yaml_diff = serializers.CharField(
        required=False, help_text="dry run: the YAML diff the rollback would apply (now -> after)"
    )
