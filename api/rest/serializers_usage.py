"""The shape of `queue/usage/` (querier time per tenant), for the schema and output."""

from __future__ import annotations

from rest_framework import serializers

from api.rest.serializers_snapshot import ReplicasSerializer

__all__ = ["QueueUsageSerializer"]


class UsageRowSerializer(serializers.Serializer):  # type: ignore[type-arg]
    tenant = serializers.CharField()
    querier_seconds = serializers.FloatField(
        help_text="worker time its requests held in the span, ended and running ones"
    )
    share = serializers.FloatField(help_text="its part of every tenant's querier_seconds, 0-1")
    workers_held = serializers.FloatField(help_text="querier_seconds / span: workers on average")
    dispatched = serializers.IntegerField(help_text="requests handed to a querier in the span")
    ended = serializers.IntegerField(help_text="runs that ended: completed, failed or cancelled")
    running = serializers.IntegerField(help_text="its requests on a worker now")
    wait_mean_seconds = serializers.FloatField(help_text="queue wait of those dispatched")
    wait_max_seconds = serializers.FloatField()
    rejected = serializers.IntegerField(help_text="refused by the queue (429, shutting down)")


class QueueUsageSerializer(serializers.Serializer):  # type: ignore[type-arg]
    running = serializers.BooleanField()
    window_seconds = serializers.FloatField(allow_null=True)
    span_seconds = serializers.FloatField(help_text="how far back the figures reach")
    querier_seconds = serializers.FloatField(help_text="every tenant's, summed")
    workers = serializers.IntegerField(help_text="worker connections now")
    tenant_count = serializers.IntegerField(
        help_text="tenants with anything in the span (scaled out: at least)"
    )
    tenants = UsageRowSerializer(many=True)
    replicas = ReplicasSerializer(
        required=False, help_text="when a peer replica is known, or not yet heard of"
    )
