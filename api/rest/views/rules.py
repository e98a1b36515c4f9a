"""`tenants/{id}/rule-stats/` and `tenants/{id}/dry-run/`: rules against real traffic.

rule-stats: how many requests each priority rule and attribute, the default
priority and each rejection attribute took, in the last 5 minutes, the last
hour and since the tenant's current version, summed over every replica
counting under that version (with a `replicas` breakdown, and the peers whose
counts could not be read in `replicas_missing`), including the requests of
federated IDs naming the tenant (a `federated` row per ID).

dry-run: the body is a tenant block (as for PUT); the answer says what it
would change on this replica's recent sample of the tenant's traffic (and of
the federated IDs naming it, under their combined limits), and how the
reserved queriers would change, naming this `replica` and the
`other_replicas` whose traffic is not in the sample. It writes nothing; the
matching runs in a worker process of its own (`api.rest.dry_run`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.cluster import replica_rules
from api.rest.dry_run import offloaded, tenant_reports
from api.rest.permissions import AnyRole
from api.rest.serializers import DryRunReportSerializer, RuleStatsSerializer, TenantConfigSerializer
from api.rest.views.base import ApiView, body_of, check_tenant_id, errors
from api.store.exceptions import ConfigValidationError
from api.store.import_plan import tenant_id_errors
from api.store.models import Tenant
from api.wire import rule_reports
from scheduler_core.dry_run import limits_of
from scheduler_core.errors import ConfigInvalid, FieldError
from scheduler_core.validation import tenant_limits_from_dict

__all__ = ["TenantDryRunView", "TenantRuleStatsView", "dry_run_report", "rule_stats_of"]


def _block(stored: Any) -> dict[str, Any]:
    # A row holding no mapping (an old release's, a hand edit's) runs as
    # the defaults, as `selectors.tenant_limits_stored` runs it.
    return dict(stored) if isinstance(stored, Mapping) else {}


def _saved(tenant_id: str) -> tuple[int | None, dict[str, Any]]:
    row = Tenant.objects.filter(tenant_id=tenant_id).values_list("version", "config").first()
    return (None, {}) if row is None else (row[0], _block(row[1]))


def _saved_blocks(org_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The saved block of every tenant the org IDs name ({} for an unconfigured one)."""
    tenants = {tenant for org_id in org_ids for tenant in org_id.split("|")}
    rows = Tenant.objects.filter(tenant_id__in=tenants).values_list("tenant_id", "config")
    return {tenant: {} for tenant in tenants} | {t: _block(c) for t, c in rows}


def rule_stats_of(tenant_id: str) -> dict[str, Any]:
    """The rule-stats body of one tenant (unconfigured tenants: the defaults).

    With the requests of federated IDs naming it (`a|b` for `a`), which
    the combined limits judged with this tenant's rules among them.
    """
    check_tenant_id(tenant_id)
    version, config = _saved(tenant_id)
    limits = limits_of(config)
    # One read of the peers' counts for the sums and the scope alike.
    peers = replica_rules.peer_counts()
    local = rule_reports.local_counts(tenant_id)
    replicas = replica_rules.tenant_counts(tenant_id, local, peers=peers)
    federated = rule_reports.federated_counts(tenant_id, peers)
    parts = {t: limits_of(block) for t, block in _saved_blocks(federated).items()}
    body = rule_reports.rule_stats_body(tenant_id, version, limits, replicas, federated, parts)
    return body | rule_reports.counts_scope(peers=peers)


def dry_run_report(tenant_id: str, draft: Any) -> dict[str, Any]:
    """Replay this replica's sample of the tenant's traffic under `draft`.

    Raises `ConfigValidationError` (400, with field paths) for a bad draft.
    """
    # The ID's problems and the draft's together, as a PUT of the block reports them.
    problems = tenant_id_errors(tenant_id)
    if not isinstance(draft, Mapping):
        problems.append(FieldError("(root)", "a tenant block must be a mapping"))
    else:
        try:
            tenant_limits_from_dict(draft)
        except ConfigInvalid as exc:
            problems += exc.errors
    if problems:
        raise ConfigValidationError(problems)
    _, saved = _saved(tenant_id)
    rows = rule_reports.sample_rows([tenant_id]).get(tenant_id, [])
    # Requests of `a|b` run under limits combined from `a`'s: saving the
    # draft changes how they are judged too, so they are replayed with it
    # in place of the saved block (each under its own ID in the report).
    sampled = rule_reports.federated_sample_rows(tenant_id)
    blocks = _saved_blocks(sampled)
    federated = [
        (
            org_id,
            org_rows,
            [blocks[t] for t in org_id.split("|")],
            [dict(draft) if t == tenant_id else blocks[t] for t in org_id.split("|")],
        )
        for org_id, org_rows in sampled.items()
    ]
    queriers = rule_reports.connected_queriers()
    jobs = [(tenant_id, rows, saved, dict(draft), federated)]
    return offloaded(tenant_reports, jobs, queriers)[tenant_id] | rule_reports.sample_scope()


class TenantRuleStatsView(ApiView):
    """Hit counts of one tenant's rules over real traffic."""

    @extend_schema(
        operation_id="tenants_rule_stats",
        summary="Rule hit statistics",
        responses={200: RuleStatsSerializer, **errors(400)},
    )
    def get(self, request: Request, tenant_id: str) -> Response:
        return Response(rule_stats_of(tenant_id))


class TenantDryRunView(ApiView):
    """What a draft tenant block would do to the tenant's recent traffic."""

    permission_classes = [AnyRole]

    @extend_schema(
        operation_id="tenants_dry_run",
        summary="Dry-run a draft block on recent traffic",
        request=TenantConfigSerializer,
        responses={200: DryRunReportSerializer, **errors(400, 413, 415)},
    )
    def post(self, request: Request, tenant_id: str) -> Response:
        # As PUT: no body is a 400, not a silent dry run of the empty block.
        draft = body_of(request, "a draft tenant block as JSON ({} for no limits)")
        return Response(dry_run_report(tenant_id, draft))
