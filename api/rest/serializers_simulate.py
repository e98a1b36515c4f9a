"""Shapes of `POST /api/v1/simulate/` for the OpenAPI schema (docs/api.md has the prose).

Like the tenant serializers, these document and never validate: the body
is checked by `api.rest.simulation.checked_spec` (its shape by
`scheduler_core.whatif_spec.read_spec`, the proposed blocks by
`scheduler_core.validation`), so every path-named error comes from the same
rules the simulator and the store use, all in one answer.
"""

from __future__ import annotations

from rest_framework import serializers

from scheduler_core.model import COMPONENTS
from scheduler_core.whatif_model import START_FROM
from scheduler_core.whatif_scenarios import SCENARIO_NAMES
from scheduler_core.whatif_spec import MAX_DURATION_SECONDS, MAX_QUERIERS, WINDOW_RANGE

__all__ = [
    "SimulateRequestSerializer",
    "SimulateResponseSerializer",
    "SimulationRunSerializer",
]


class WorkloadSpecSerializer(serializers.Serializer):  # type: ignore[type-arg]
    kind = serializers.ChoiceField(choices=["recent", "scenario"])
    window_seconds = serializers.IntegerField(
        required=False,
        min_value=WINDOW_RANGE[0],
        max_value=WINDOW_RANGE[1],
        help_text="recent: the last N seconds of this replica's traffic (default 900)",
    )
    name = serializers.ChoiceField(
        choices=list(SCENARIO_NAMES), required=False, help_text="scenario: which one"
    )


class ProposedSerializer(serializers.Serializer):  # type: ignore[type-arg]
    settings = serializers.DictField(
        required=False, help_text="scheduler settings to change, as PATCH settings/ takes them"
    )
    tenants = serializers.DictField(
        child=serializers.DictField(allow_null=True),
        required=False,
        help_text=(
            "tenant id -> its whole block, as PUT tenants/<id> takes it, replacing that "
            "tenant's; null removes the tenant's override, as a JSON merge patch does: it "
            "runs with the defaults, as a deleted tenant would. Every error of the request "
            "is answered at once: a bad tenant ID at proposed.tenants.<id> (under "
            "non_field_errors when its block has errors too) beside its block's and the "
            "settings' errors. A tenant that is neither configured nor in the workload's "
            "traffic (the scenario's tenants) is a 400 at proposed.tenants.<id>"
        ),
    )


class KnobsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    arrival_factor = serializers.FloatField(
        required=False, allow_null=True, help_text="multiply arrivals (0-100]; null: 1"
    )
    service_factor = serializers.DictField(
        child=serializers.FloatField(),
        required=False,
        help_text=f"component ({', '.join(COMPONENTS)}) -> multiply its service time (0-1000]",
    )
    queriers = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_QUERIERS,
        help_text="simulate this many queriers (null: as connected / the scenario's)",
    )
    duration_seconds = serializers.FloatField(
        required=False, allow_null=True, help_text=f"(0-{MAX_DURATION_SECONDS:g}]"
    )
    slow_share = serializers.FloatField(
        required=False, allow_null=True, help_text="mimir-slow-consumer only: share of slow work"
    )
    start_from = serializers.ChoiceField(
        choices=list(START_FROM),
        required=False,
        allow_null=True,
        help_text=(
            "recent only: the backlog the proposal's window starts with. proposal (default, "
            "null): the one it would have built over the warm-up, as if applied long ago; "
            "live: the warm-up queued under the live config and the proposal applied at the "
            "window's start, as a save now would (queued requests keep their live priority). "
            "live for a scenario is a 400"
        ),
    )


class SimulateRequestSerializer(serializers.Serializer):  # type: ignore[type-arg]
    workload = WorkloadSpecSerializer()
    proposed = ProposedSerializer(required=False)
    knobs = KnobsSerializer(required=False)
    seed = serializers.IntegerField(required=False, default=1, min_value=0)
    run_id = serializers.RegexField(
        r"^[A-Za-z0-9_-]{1,64}$",
        required=False,
        help_text="client-chosen id, for GET/DELETE simulate/<run_id>/ while it runs",
    )


class WaitStatsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    mean = serializers.FloatField()
    p50 = serializers.FloatField()
    p99 = serializers.FloatField()
    max = serializers.FloatField()
    count = serializers.IntegerField()


class TenantWaitSerializer(WaitStatsSerializer):
    tenant = serializers.CharField()


class RejectedSerializer(serializers.Serializer):  # type: ignore[type-arg]
    total = serializers.IntegerField()
    too_many_outstanding = serializers.IntegerField(help_text="429: over the outstanding limit")
    by_rule = serializers.IntegerField(help_text="refused by a query_rejection rule (422)")
    too_many_tenants = serializers.IntegerField(
        help_text="federated org IDs over max_federated_tenants (400)"
    )
    by_tenant = serializers.DictField(child=serializers.IntegerField())


class SeriesSerializer(serializers.Serializer):  # type: ignore[type-arg]
    t = serializers.ListField(child=serializers.FloatField(), help_text="virtual seconds")
    queue_length = serializers.ListField(child=serializers.IntegerField())


class RequestCountsSerializer(serializers.Serializer):  # type: ignore[type-arg]
    offered = serializers.IntegerField()
    enqueued = serializers.IntegerField()
    completed = serializers.IntegerField()
    left_queued = serializers.IntegerField()


class WaitingAtWindowEndSerializer(serializers.Serializer):  # type: ignore[type-arg]
    total = serializers.IntegerField()
    by_priority = serializers.DictField(
        child=serializers.IntegerField(), help_text="keyed by priority as a string"
    )


class SimulationResultSerializer(serializers.Serializer):  # type: ignore[type-arg]
    by_priority = serializers.DictField(
        child=WaitStatsSerializer(), help_text="queue wait (s), keyed by priority as a string"
    )
    by_component = serializers.DictField(
        child=WaitStatsSerializer(), help_text="queue wait (s), keyed by component"
    )
    worst_tenants = TenantWaitSerializer(many=True, help_text="the five highest p99 waits")
    rejected = RejectedSerializer()
    utilisation = serializers.DictField(
        child=serializers.FloatField(), help_text="busy share of all workers, by component"
    )
    reserved_idle_seconds = serializers.FloatField(
        help_text="summed over reserved queriers: time with no busy worker"
    )
    reserved_queriers = serializers.ListField(child=serializers.CharField())
    requests = RequestCountsSerializer()
    makespan_seconds = serializers.FloatField()
    waiting_at_window_end = WaitingAtWindowEndSerializer(
        allow_null=True,
        help_text="recent traffic: requests still queued when the window ended (their waits "
        "are not among the window's); null for a scenario, drained to its end",
    )
    series = SeriesSerializer(help_text="queue length over virtual time, for the charts")


class SimulateResponseSerializer(serializers.Serializer):  # type: ignore[type-arg]
    live = SimulationResultSerializer()
    proposed = SimulationResultSerializer()
    workload = serializers.DictField(
        help_text="what was simulated (kind, size, fleet, seed); for recent traffic also "
        "`replica` (whose traffic), `other_replicas` (peers whose traffic is not in it) and "
        "`start_from` (the knob as run)"
    )
    verdicts = serializers.ListField(
        child=serializers.CharField(), help_text='one line per priority: "p99 for priority 3: ..."'
    )


class SimulationRunSerializer(serializers.Serializer):  # type: ignore[type-arg]
    run_id = serializers.CharField()
    state = serializers.ChoiceField(choices=["running", "done", "cancelled", "failed"])
    progress = serializers.FloatField(help_text="0-1")
    elapsed_seconds = serializers.FloatField()
    time_limit_seconds = serializers.FloatField()
