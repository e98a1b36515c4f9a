"""Tenants list, tenant editor (limits and ordered priority rules) and explain box.

The editor posts the whole draft on every button, from whichever of its two
views is open (the form, or the YAML view of the block: `dashboard.tenant_draft`).
"save" is reviewed, then saved (`dashboard.tenant_editor`, which also
renders the page for every button). "view-yaml"/"view-form" switch views
carrying the draft across, with its validation errors on their lines or
fields; the structural buttons (add, remove, move) edit the draft and show
it again without saving; "explain" runs the draft through the same explain
selector as the REST API, so what the box says is what the scheduler will do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from api.cluster import replica_rules
from api.store import selectors, services
from api.store.exceptions import NotFound, VersionConflict
from api.store.models import ConfigRevision, Tenant
from dashboard.access import current_tick, editor_required, forbidden, page, role_required
from dashboard.explain_box import NOT_A_BLOCK, explain_inputs, run_explain
from dashboard.forms import EditorAction, apply_action
from dashboard.tenant_draft import FORM, YAML, draft_from_post, spelled_as_saved
from dashboard.tenant_editor import render_editor, save_draft
from dashboard.views import posted_version, stale_message
from dashboard.views_rules import default_shares, dry_run_box, shares_not_counted
from scheduler_core.errors import FieldError
from scheduler_core.snapshot import LeafSnapshot
from scheduler_core.validation import validate_tenant_config

__all__ = ["explain", "tenant_delete", "tenant_edit", "tenant_new", "tenants"]

UI = ConfigRevision.Source.UI


@role_required
def tenants(request: HttpRequest) -> HttpResponse:
    """Configured tenants with their live queue depth and rule count."""
    search = request.GET.get("search", "").strip()
    paginator = Paginator(selectors.tenant_list(search=search or None), 50)
    chunk = paginator.get_page(request.GET.get("page"))
    tick = current_tick()
    leaves = tick.index.tenant_leaves if tick else {}
    rows = []
    peers = replica_rules.peer_counts()
    shares = default_shares(((t.tenant_id, t.config) for t in chunk), peers)
    federated = _federated_depths(leaves, {t.tenant_id for t in chunk})
    for tenant in chunk:
        qp = tenant.config.get("query_priority") or {}
        rows.append(
            {
                "tenant": tenant,
                "depth": sum(leaf.length for leaf in leaves.get(tenant.tenant_id, ())),
                "federated_depth": federated.get(tenant.tenant_id),
                "rules": len(qp.get("priorities") or []),
                "enabled": bool(qp.get("enabled")),
                "default_share": shares.get(tenant.tenant_id),
                "invalid": validate_tenant_config(tenant.config),
            }
        )
    context = {
        "rows": rows,
        "page_obj": chunk,
        "search": search,
        "live": tick is not None,
        "shares_not_counted": shares_not_counted(peers),
        "default_outstanding": selectors.queue_config_get().max_outstanding_requests_per_tenant,
    }
    return page(request, "dashboard/tenants.html", context)


def _federated_depths(
    leaves: Mapping[str, Sequence[LeafSnapshot]], tenant_ids: set[str]
) -> dict[str, dict[str, Any]]:
    """tenant -> {"depth", "org_ids"}: queued under the federated IDs naming it.

    A request of `team|zeta` waits in that ID's own queue, not `team`'s, so
    the tenant's own depth leaves it out; shown beside it, not added in.
    """
    found: dict[str, dict[str, Any]] = {}
    for org_id, queued in leaves.items():
        if "|" not in org_id:
            continue
        depth = sum(leaf.length for leaf in queued)
        for tenant_id in tenant_ids.intersection(org_id.split("|")):
            mine = found.setdefault(tenant_id, {"depth": 0, "org_ids": []})
            mine["depth"] += depth
            mine["org_ids"].append(org_id)
    for mine in found.values():
        mine["org_ids"].sort()
    return found


# Past this many attributes a tenant's editor opens in the YAML view: the
# form has about 11 boxes an attribute, and the largest tenant's 55,000 took
# Chromium 45-60 s to make usable (docs/performance.md, session 42).
FORM_ATTRIBUTES_MAX = 500
NO_LONGER_VALIDATES = (
    "The stored block no longer validates (it was saved before validation got stricter; "
    "the errors are marked below), so the scheduler runs this tenant under the default "
    "limits: no querier shard, no priority or rejection rules, the default outstanding cap. "
    "Save it fixed to apply it again."
)


def _post(
    request: HttpRequest, tenant_id: str, version: int | None, is_new: bool = False
) -> HttpResponse:
    posted = draft_from_post(request.POST)
    action = request.POST.get("action", "save")
    show = {"tenant_id": tenant_id, "version": version, "is_new": is_new, "draft": posted}
    if action == "save" and request.role != "editor":  # type: ignore[attr-defined]
        return forbidden(request, "Saving needs the editor role.")
    if posted.config is None:
        # The YAML text is no tenant block: stay on it, the problem at its line.
        status = 400 if action == "save" else 200
        return render_editor(request, config={}, view=YAML, status=status, **show)
    draft = posted.config
    if action == "save":
        return save_draft(request, tenant_id, posted, version, is_new)
    if action == "explain":
        explained = run_explain(tenant_id, draft, explain_inputs(request.POST))
        return render_editor(request, config=draft, explained=explained, view=posted.view, **show)
    if action in ("view-yaml", "view-form"):
        view = YAML if action == "view-yaml" else FORM
        if view == YAML and posted.view == FORM:
            # The form posts every box it shows: the YAML shows what Save
            # would keep, not fields at their unset value the block never
            # had (which Save then reported as "left out").
            stored = Tenant.objects.filter(tenant_id=tenant_id).values_list("config", flat=True)
            draft = spelled_as_saved(draft, stored.first(), form=True)
        errors = validate_tenant_config(draft)
        return render_editor(request, config=draft, errors=errors, view=view, **show)
    if action == "dry-run":
        box = dry_run_box(tenant_id, draft)
        return render_editor(request, config=draft, dry_run=box, view=posted.view, **show)
    apply_action(draft, EditorAction(action))
    return render_editor(request, config=draft, **show)


@role_required
def tenant_edit(request: HttpRequest, tenant_id: str) -> HttpResponse:
    """One tenant's limits and rules; viewers see them read-only."""
    if request.method == "POST":
        return _post(request, tenant_id, posted_version(request))
    try:
        tenant = selectors.tenant_get(tenant_id=tenant_id)
    except NotFound as exc:
        raise Http404(str(exc)) from exc
    # A block saved before the validator tightened (an upgrade): its errors
    # go on their fields and lines, as a draft's would, so saving it fixed
    # is the editor's ordinary path.
    invalid = validate_tenant_config(tenant.config)
    if invalid:
        messages.warning(request, NO_LONGER_VALIDATES)
    attributes = _attribute_count(tenant.config)
    if attributes > FORM_ATTRIBUTES_MAX:
        messages.info(request, _opens_as_yaml(attributes))
    return render_editor(
        request,
        tenant_id=tenant_id,
        config=tenant.config,
        version=tenant.version,
        errors=invalid,
        show_hits=True,
        view=YAML if attributes > FORM_ATTRIBUTES_MAX else FORM,
    )


def _attribute_count(config: Mapping[str, Any]) -> int:
    """The query attributes of a tenant block, priority rules' and rejection's.

    Read as stored: a block that no longer validates may have any shape.
    """

    def mapping(value: Any) -> Mapping[str, Any]:
        return value if isinstance(value, Mapping) else {}

    def attributes(block: Mapping[str, Any]) -> int:
        found = block.get("query_attributes")
        return len(found) if isinstance(found, list) else 0

    rules = mapping(config.get("query_priority")).get("priorities")
    rules = rules if isinstance(rules, list) else []
    return sum(attributes(mapping(rule)) for rule in rules) + attributes(
        mapping(config.get("query_rejection"))
    )


def _opens_as_yaml(attributes: int) -> str:
    return (
        f"This tenant has {attributes} query attributes, about {attributes * 11:,} boxes in the "
        "form view, which a browser takes up to a minute to open for the largest tenants; "
        "so it opens in the YAML view. The Form button shows the form."
    )


@editor_required
def tenant_new(request: HttpRequest) -> HttpResponse:
    """Create a tenant (the version check is "must not exist yet")."""
    tenant_id = request.POST.get("tenant_id", "").strip()
    if request.method != "POST":
        return render_editor(request, tenant_id="", config={}, version=None, is_new=True)
    if not tenant_id:
        # A pasted block's own key line names the new tenant.
        tenant_id = draft_from_post(request.POST).pasted_tenant or ""
    if not tenant_id and request.POST.get("action", "save") == "save":
        error = FieldError("tenant_id", "required")
        posted = draft_from_post(request.POST)
        return render_editor(
            request,
            tenant_id="",
            config=posted.config or {},
            version=None,
            errors=[error],
            status=400,
            is_new=True,
            view=posted.view,
            draft=posted,
            saving=True,
        )
    return _post(request, tenant_id, None, is_new=True)


@require_POST
@role_required
def explain(request: HttpRequest, tenant_id: str) -> HttpResponse:
    """The explain box as an HTML fragment, for the editor's script."""
    posted = draft_from_post(request.POST)
    if posted.config is None:
        explained: dict[str, Any] = {"problem": NOT_A_BLOCK}
    else:
        explained = run_explain(tenant_id, posted.config, explain_inputs(request.POST))
    return render(request, "dashboard/_explain.html", {"explained": explained})


@require_POST
@editor_required
def tenant_delete(request: HttpRequest, tenant_id: str) -> HttpResponse:
    """Delete a tenant from its editor's dialog, at the version the page was opened at.

    A post without that version is refused, as the REST DELETE without
    `If-Match` is (428): deleting whatever is current could delete a
    change nobody on this page has seen.
    """
    version = posted_version(request)
    if version is None:
        messages.error(
            request,
            f"Nothing was deleted: the form gave no version of {tenant_id} (the version the "
            "page was opened at). Delete it from its page.",
        )
        return redirect(reverse("dashboard:tenant", args=[tenant_id]))
    try:
        services.tenant_delete(
            tenant_id=tenant_id,
            expected_version=version,
            author=request.user,
            source=UI,
            message=request.POST.get("message", ""),
        )
    except VersionConflict as exc:
        messages.error(request, stale_message(exc.current_version))
        return redirect(reverse("dashboard:tenant", args=[tenant_id]))
    except NotFound:
        messages.error(
            request,
            f"There is no tenant {tenant_id} to delete: if it was deleted since you loaded "
            "its page, History lists the deletion.",
        )
    else:
        messages.success(
            request,
            f"Deleted {tenant_id}; its queued and future requests now use the default limits. "
            "History can roll the deletion back.",
        )
    return redirect("dashboard:tenants")
