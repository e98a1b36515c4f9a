"""The tenant editor's traffic tools: dry run of the form, and rule hit shares.

"Test against recent traffic" posts the whole (unsaved) form, like Explain;
the draft goes through the same `api.rest.views.rules.dry_run_report` as
`POST /api/v1/tenants/<id>/dry-run/`, so the box shows what the REST API
answers. The tenants list shows each tenant's default-priority share over
the last hour, summed over the replicas counting under its current config,
and names the replicas whose counts are not in the sums.
Both follow federation as the REST answers do: a federated ID's requests
(`team|zeta` for `team`) count, and are shown apart under their own ID.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from api.cluster import replica_rules
from api.cluster.replica_rules import PeerCounts
from api.rest.offload import ImportWorkerDied
from api.rest.views.rules import dry_run_report
from api.store import selectors
from api.store.exceptions import ConfigValidationError
from api.wire import rule_reports
from dashboard.access import role_required
from dashboard.explain_box import NOT_A_BLOCK, rules_problem
from dashboard.tenant_draft import draft_from_post
from scheduler_core.dry_run import EXAMPLES_PER_CHANGE, limits_of
from scheduler_core.model import TenantLimits

__all__ = ["default_shares", "dry_run", "dry_run_box", "shares_not_counted"]


def _label(outcome: Any) -> str:
    return "rejected (422)" if outcome == "rejected" else f"priority {outcome}"


def dry_run_box(tenant_id: str, draft: dict[str, Any]) -> dict[str, Any]:
    """The dry-run box's content for a draft block."""
    try:
        report = dry_run_report(tenant_id, draft)
    except ConfigValidationError as exc:
        return {"problem": rules_problem(exc.errors)}
    except ImportWorkerDied as exc:  # a 500 page in the box, before
        return {"problem": str(exc.detail)}
    before, after = report["reservations"]["before"], report["reservations"]["after"]
    levels = sorted(set(before) | set(after), key=lambda p: -int(p))
    federated = report.get("federated", [])
    # What each side's reservations leave the lower priorities: said in the
    # drill-down's words by the editor's script. The tenant's queue holds its
    # own requests only; each federated ID's queue is apart, under that ID's
    # shard and reservations (its row's `serving`: its tenants' combined
    # limits), so its requests are counted against those.
    own = _serving_lines(tenant_id, report["serving"], _own_part(report, federated))
    groups = [{"federated": False, "lines": own}]
    if federated:
        lines = [
            line
            for row in federated
            for line in _serving_lines(row["org_id"], row["serving"], row, federated=True)
        ]
        groups.append({"federated": True, "lines": lines})
    return {
        **report,
        "changed_rows": [
            dict(row, from_label=_label(row["from"]), to_label=_label(row["to"]))
            for row in report["changed"]
        ],
        "changed_total": _changed_total(report),
        # Requests of federated IDs naming the tenant are in the counts above;
        # listed by ID, so none is taken for the tenant's own traffic.
        "federated_rows": [
            dict(
                row,
                changed_total=_changed_total(row),
                examples=[q for change in row["changed"] for q in change["examples"]][
                    :EXAMPLES_PER_CHANGE
                ],
            )
            for row in federated
        ],
        "reservation_rows": [
            {"priority": p, "before": before.get(p, []), "after": after.get(p, [])} for p in levels
        ],
        "serving_groups": groups,
    }


def _changed_total(report: Mapping[str, Any]) -> int:
    return sum(row["count"] for row in report["changed"])


def _own_part(report: Mapping[str, Any], federated: list[dict[str, Any]]) -> dict[str, Any]:
    """The report's sample and `by_priority` less the federated IDs' (the tenant's own)."""
    by_priority = {}
    for side in ("before", "after"):
        counts = dict(report["by_priority"][side])
        for row in federated:
            for priority, count in row["by_priority"][side].items():
                counts[priority] -= count
        by_priority[side] = {p: n for p, n in counts.items() if n}
    return {
        "sample": report["sample"] - sum(row["sample"] for row in federated),
        "by_priority": by_priority,
    }


def _serving_lines(
    who: str, serving: Mapping[str, Any], traffic: Mapping[str, Any], *, federated: bool = False
) -> list[dict[str, Any]]:
    """The box's "who would serve it" lines of one queue, now and with the form."""
    return [
        {
            "label": f"{who}, {label.lower()}" if federated else label,
            "tenant": who,
            "serving": serving[side],
            "below": _below_reserved(serving[side], traffic["by_priority"][side]),
            "sample": traffic["sample"],
        }
        for label, side in (("Now", "before"), ("With the form", "after"))
    ]


def _below_reserved(serving: Mapping[str, Any], by_priority: Mapping[str, int]) -> int | None:
    """Sampled requests a config admits below its lowest reserved priority."""
    if not serving["reserved"]:
        return None
    lowest = min(priority for priority, _ in serving["reserved"])
    return sum(count for priority, count in by_priority.items() if int(priority) < lowest)


@require_POST
@role_required
def dry_run(request: HttpRequest, tenant_id: str) -> HttpResponse:
    """The dry-run box as an HTML fragment, for the editor's script.

    The draft of whichever view posted: read as the form's inputs, the
    YAML view's post (its text, no inputs) was a block without rules, and
    the box said every sampled request would drop to priority 0.
    """
    posted = draft_from_post(request.POST)
    if posted.config is None:
        box: dict[str, Any] = {"problem": NOT_A_BLOCK}
    else:
        box = dry_run_box(tenant_id, posted.config)
    return render(request, "dashboard/_dry_run.html", {"dry_run": box})


def default_shares(
    configs: Iterable[tuple[str, Mapping[str, Any]]], peers: PeerCounts
) -> dict[str, dict[str, Any]]:
    """tenant -> {"default", "total", "federated"}: requests in the last hour, every replica.

    Counted as the tenant's rule-stats count them: under its current config
    only (for a version saved less than an hour ago, since it was saved: the
    column's title says so), with the requests of federated IDs naming it
    folded in (one that another tenant's priority rules judged counts in the
    total only). `federated` is their part, {"default", "total", "org_ids"},
    or None when the hour had none. `peers`: the read `shares_not_counted`
    is given too, so the list's note is about the shares shown.
    """
    wanted = {tenant_id: limits_of(config) for tenant_id, config in configs}
    local = rule_reports.local_counts_many(wanted)
    federated = rule_reports.federated_counts_many(wanted, peers)
    parts = _member_limits(wanted, federated.values())
    shares: dict[str, dict[str, Any]] = {}
    for tenant_id, limits in wanted.items():
        replicas = replica_rules.tenant_counts(tenant_id, local.get(tenant_id), peers=peers)
        body = rule_reports.rule_stats_body(
            tenant_id, None, limits, replicas, federated[tenant_id], parts
        )
        whole = _hour(body)
        if not whole["total"]:
            continue
        shares[tenant_id] = {**whole, "federated": None}
        if not body["federated"]:
            continue  # nothing folded in: the counts are the tenant's own
        # The federated part: what folding them in added to the tenant's own.
        own = _hour(rule_reports.rule_stats_body(tenant_id, None, limits, replicas))
        part = {key: whole[key] - count for key, count in own.items()}
        org_ids = [row["org_id"] for row in body["federated"] if row["total"]["1h"]]
        if part["total"]:
            shares[tenant_id]["federated"] = {**part, "org_ids": org_ids}
    return shares


def shares_not_counted(peers: PeerCounts) -> str | None:
    """What the list's default shares leave out on a scaled-out service, or None.

    The shares are summed as rule-stats sums them, over the replicas whose
    counts could be read: a peer hung, killed or not read yet (rule-stats'
    `replicas_missing`), or all of them while Redis is unreachable
    (`replicas_note`), leaves its requests out of every share, and out of a
    "no traffic" too. Said once for the list, so no share reads as the
    service's; None for a lone replica, or with every peer counted.
    """
    scope = rule_reports.counts_scope(peers=peers)
    said: list[str] = []
    if note := scope.get("replicas_note"):
        said.append(f"Partial shares: {note}.")
    if missing := scope["replicas_missing"]:
        whose = "its" if len(missing) == 1 else "their"
        said.append(
            f"Not counted: {', '.join(missing)} ({whose} counts are not in: not answering, "
            f"or not read yet). The default shares leave {whose} requests out."
        )
    return " ".join(said) or None


def _hour(body: Mapping[str, Any]) -> dict[str, int]:
    return {"default": body["default"]["matched"]["1h"], "total": body["total"]["1h"]}


def _member_limits(
    page: Mapping[str, TenantLimits], federated: Iterable[Mapping[str, Any]]
) -> dict[str, TenantLimits]:
    """The limits of every tenant the federated IDs name (the defaults for an unconfigured one)."""
    named = {t for org_ids in federated for org_id in org_ids for t in org_id.split("|")}
    others = sorted(named - set(page))
    saved = {t: {} for t in others} | selectors.tenant_configs(others)
    return {**{t: limits_of(block) for t, block in saved.items()}, **page}
