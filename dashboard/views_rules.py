"""The tenant editor's traffic tools: dry run of the form, and rule hit shares.

"Test against recent traffic" posts the whole (unsaved) form, like Explain;
the draft goes through the same `api.rest.views.rules.dry_run_report` as
`POST /api/v1/tenants/<id>/dry-run/`, so the box shows what the REST API
answers. The tenants list shows each tenant's default-priority share over
the last hour, summed over the replicas counting under its current config.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from api.cluster import replica_rules
from api.rest.views.rules import dry_run_report
from api.store.exceptions import ConfigValidationError
from api.wire import rule_reports
from dashboard.access import role_required
from dashboard.explain_box import NOT_A_BLOCK, rules_problem
from dashboard.tenant_draft import draft_from_post
from scheduler_core.dry_run import EXAMPLES_PER_CHANGE
from scheduler_core.errors import ConfigInvalid
from scheduler_core.model import TenantLimits
from scheduler_core.rule_stats import limits_fingerprint
from scheduler_core.validation import tenant_limits_from_dict

__all__ = ["default_shares", "dry_run", "dry_run_box"]


def _label(outcome: Any) -> str:
    return "rejected (422)" if outcome == "rejected" else f"priority {outcome}"


def dry_run_box(tenant_id: str, draft: dict[str, Any]) -> dict[str, Any]:
    """The dry-run box's content for a draft block."""
    try:
        report = dry_run_report(tenant_id, draft)
    except ConfigValidationError as exc:
        return {"problem": rules_problem(exc.errors)}
    before, after = report["reservations"]["before"], report["reservations"]["after"]
    levels = sorted(set(before) | set(after), key=lambda p: -int(p))
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
            for row in report.get("federated", [])
        ],
        "reservation_rows": [
            {"priority": p, "before": before.get(p, []), "after": after.get(p, [])} for p in levels
        ],
        "tenant_id": tenant_id,
        # What each side's reservations leave the tenant's lower priorities:
        # said in the drill-down's words by the editor's script.
        "serving_lines": [
            {
                "label": label,
                "serving": report["serving"][side],
                "below": _below_reserved(report["serving"][side], report["by_priority"][side]),
            }
            for label, side in (("Now", "before"), ("With the form", "after"))
        ],
    }


def _changed_total(report: Mapping[str, Any]) -> int:
    return sum(row["count"] for row in report["changed"])


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


def _limits(config: Mapping[str, Any]) -> TenantLimits:
    try:
        return tenant_limits_from_dict(config)
    except ConfigInvalid:
        return TenantLimits()


def default_shares(configs: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, dict[str, int]]:
    """tenant -> {"default", "total"} requests in the last hour, every replica.

    Counted under the tenant's current config only, so for a version saved
    less than an hour ago, since it was saved (the column's title says so).
    """
    wanted = dict(configs)
    local = rule_reports.local_counts_many(wanted)
    shares: dict[str, dict[str, int]] = {}
    for tenant_id, config in wanted.items():
        fingerprint = limits_fingerprint(_limits(config))
        default = total = 0
        for counts in replica_rules.tenant_counts(tenant_id, local.get(tenant_id)):
            hour = counts.windows.get("1h") or []
            if counts.fingerprint == fingerprint and len(hour) > 1:
                total += hour[0]
                default += hour[1]
        if total:
            shares[tenant_id] = {"default": default, "total": total}
    return shares
