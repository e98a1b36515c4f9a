"""Shapes of `explain/` (why a request would get its component and priority).

The request body is validated here, as DRF serializers do: times as Unix
seconds or RFC 3339, a step as a Prometheus duration, unknown fields
refused, and the same time checks enqueue makes on both protocols
(`scheduler_core.bounds`). The response describes `scheduler_core`'s
explanation for the schema.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.rest.errors import nested_errors
from api.rest.serializers import DurationField, TenantBlockField
from api.store import selectors
from scheduler_core.bounds import (
    MAX_TIMESTAMP,
    MIN_TIMESTAMP,
    cortex_step_seconds,
    request_times_error,
    timestamp_error,
)
from scheduler_core.cortex_http import parse_duration_seconds, parse_prometheus_time
from scheduler_core.errors import ConfigInvalid
from scheduler_core.federation import federated_tenants_error, normalized_org_id, org_id_error
from scheduler_core.model import API_TYPES, COMPONENTS
from scheduler_core.validation import InvalidDuration, parse_duration, tenant_limits_from_dict

__all__ = ["MAX_MATCHERS", "ExplainRequestSerializer", "ExplainResponseSerializer"]

MAX_QUERY_CHARS = 65536
# `match[]` selectors one explained call may carry: their ',' join is also
# held to MAX_QUERY_CHARS, the bound of the `query` it stands for.
MAX_MATCHERS = 1000
# The calls whose `match[]` the door keeps apart (`cortex_http`): every other.
_EXPRESSION_CALLS = ("query", "query_range")


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
            return self._text(data)
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return _finite(data)

    def _text(self, data: str) -> float:
        # Read as the querier reads a time parameter (and so the gRPC door):
        # Python's own readers took times Prometheus answers 400 (a naive
        # "2026-01-02T03:04:05", read in the server's time zone; a bare date;
        # " 5") and rounded a fraction Prometheus truncates to the millisecond.
        seconds = parse_prometheus_time(data)
        if seconds is not None:
            return seconds
        try:
            number = float(data)
        except ValueError:
            self.fail("invalid")
        _finite(number)  # beyond Prometheus' range: the error says which bound
        self.fail("invalid")

    default_error_messages = {
        "invalid": "must be unix seconds or an RFC 3339 time with a zone (as Prometheus reads them)"
    }


class StepField(DurationField):
    """A step as a Prometheus duration or seconds (a number, or text); gives seconds."""

    def to_internal_value(self, data: Any) -> float | None:
        if data is None:
            return None
        if isinstance(data, str):
            # The step parameter as Cortex reads it ("15", "0.5", "1m30s";
            # truncated to the millisecond), so a step copied from a request
            # URL explains as the gRPC door admits it; else the error below.
            seconds = parse_duration_seconds(data)
            if seconds is not None:
                return seconds
        try:
            seconds = parse_duration(data)
        except InvalidDuration as exc:
            raise serializers.ValidationError(str(exc)) from exc
        if seconds < 0:
            raise serializers.ValidationError("must not be negative")
        # A number as the websocket door reads it: truncated to the millisecond.
        return cortex_step_seconds(seconds)


def _finite(value: float) -> float:
    """Unix seconds Prometheus' API accepts (an int of any size is compared exactly)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise serializers.ValidationError("must be a finite number")
    problem = timestamp_error(value)
    if problem is not None:
        raise serializers.ValidationError(problem)
    return float(value)


class TextField(serializers.CharField):
    """A `CharField` that takes only a JSON string.

    DRF's turns a number into its text, so `{"tenant": 5}` explained tenant
    "5" and `{"query": 1}` the query "1": an error naming the field is what
    the client needs to see.
    """

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            raise serializers.ValidationError(f"must be a string, got {type(data).__name__}")
        return str(super().to_internal_value(data))


class ExplainRequestSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """One request to explain; unknown fields are errors, as in tenant blocks."""

    tenant = TextField(
        min_length=1, help_text="an org ID as the doors take it: a tenant, or a federated a|b"
    )
    query = TextField(required=False, allow_blank=True, default="", max_length=MAX_QUERY_CHARS)
    api_type = serializers.ChoiceField(choices=list(API_TYPES), default="query")
    # null is "not given", as docs/api.md's example sends it.
    start = TimestampField(required=False, default=None, allow_null=True)
    end = TimestampField(required=False, default=None, allow_null=True)
    step = StepField(required=False, default=None, allow_null=True)
    headers = serializers.DictField(
        child=TextField(allow_blank=True, max_length=4096), default=dict
    )
    matchers = serializers.ListField(
        child=TextField(allow_blank=True, max_length=MAX_QUERY_CHARS),
        required=False,
        default=None,
        allow_null=True,
        max_length=MAX_MATCHERS,
        help_text=(
            "a series/labels/label_values/metadata/other call's match[] selectors, each on its"
            " own, as the gRPC door reads them; `query` is then empty or their ',' join"
        ),
    )
    now = TimestampField(
        required=False, default=None, allow_null=True, help_text="evaluate as of; default now"
    )
    tenant_config = TenantBlockField(
        required=False, default=None, allow_null=True, help_text="explain against a draft block"
    )

    def to_internal_value(self, data: Any) -> Any:
        unknown: dict[str, Any] = {}
        if isinstance(data, Mapping):
            names = sorted(str(key) for key in data if key not in self.fields)
            unknown = {name: ["unknown field"] for name in names}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            # Every problem of the body at once (docs/api.md "Errors"): an
            # unknown field used to hide the known fields' errors, so a
            # client fixed one and was then told of the next.
            if not unknown or not isinstance(exc.detail, dict):
                raise
            raise serializers.ValidationError({**unknown, **exc.detail}) from exc
        if unknown:
            raise serializers.ValidationError(unknown)
        return value

    def validate_tenant(self, value: str) -> str:
        # The doors' check, so explain never answers for an org ID they refuse.
        problem = org_id_error(value) or federated_tenants_error(
            value, selectors.queue_config_get().max_federated_tenants
        )
        if problem is not None:
            raise serializers.ValidationError(problem)
        return normalized_org_id(value)

    def validate_headers(self, value: dict[str, str]) -> dict[str, str]:
        # Header names have no case: two spellings of one made the answer
        # depend on the order of the keys.
        seen: dict[str, str] = {}
        for name in value:
            first = seen.setdefault(name.lower(), name)
            if first != name:
                raise serializers.ValidationError(f"{first!r} and {name!r} are the same header")
        return value

    def validate_tenant_config(self, value: Any) -> Any:
        # Judged here too (`selectors.query_explain` judges it again for its
        # other callers), so a bad draft is reported with the body's other
        # errors rather than only once they are fixed.
        if value is None:
            return value
        if not isinstance(value, Mapping):
            raise serializers.ValidationError("must be a mapping")
        try:
            tenant_limits_from_dict(value)
        except ConfigInvalid as exc:
            raise serializers.ValidationError(nested_errors(exc.errors)) from exc
        return value

    def validate_matchers(self, value: list[str] | None) -> list[str] | None:
        if value is not None and len(",".join(value)) > MAX_QUERY_CHARS:
            raise serializers.ValidationError(
                f"joined by ',' they must fit in {MAX_QUERY_CHARS} characters, as `query` does"
            )
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # The check enqueue makes on both protocols, so explain never answers
        # for a request the scheduler would refuse (start after end, a zero step).
        problem = request_times_error(attrs.get("start"), attrs.get("end"), attrs.get("step"))
        if problem is not None:
            raise serializers.ValidationError({problem.field: [problem.message]})
        matchers = attrs.get("matchers")
        if matchers is not None:
            if attrs["api_type"] in _EXPRESSION_CALLS:
                raise serializers.ValidationError(
                    {"matchers": [f"a {attrs['api_type']} call has no match[] selectors"]}
                )
            # The door's `query` of such a call is this join (the queue
            # listing shows it); another text would explain another request.
            joined = ",".join(matchers)
            if attrs["query"] not in ("", joined):
                raise serializers.ValidationError(
                    {"query": ["with matchers, leave it empty or give their ',' join"]}
                )
            attrs["query"] = joined
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
