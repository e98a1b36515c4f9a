"""Shapes of the runtime's snapshots (`queue/`, `queriers/`), for the schema and output.

The views build plain dicts from `scheduler_core` snapshots (and peer
replicas' published rows); these serializers describe them and render
them. Nothing here validates input.
"""

from __future__ import annotations

from rest_framework import serializers

__all__ = [
    "FrontendRowSerializer",
    "QueriersSnapshotSerializer",
    "QueueSnapshotSerializer",
    "ReplicasSerializer",
]


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
    missing = serializers.ListField(
        child=serializers.CharField(),
        help_text="peers left out of this answer: down, or every peer known while Redis is "
        "unreachable",
    )
    peers_max_age = serializers.FloatField(help_text="seconds since the oldest peer summary")
    note = serializers.CharField(
        help_text="empty when no peer answers; says so while this replica has not heard of "
        "its peers"
    )
    unlisted_requests = serializers.IntegerField(
        required=False,
        help_text="present when peers queue requests in queues their summaries do not list "
        "(beyond their 1000 longest, or under org IDs over 1024 characters): in `total`, in "
        "no queue row",
    )


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
    replicas = ReplicasSerializer(
        required=False, help_text="when a peer replica is known, or not yet heard of"
    )


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
