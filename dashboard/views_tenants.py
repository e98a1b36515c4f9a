"""Tenants list, tenant editor (limits and ordered priority rules) and explain box.

The editor posts the whole draft on every button, from whichever of its two
views is open (the form, or the YAML view of the block: `dashboard.tenant_draft`).
"save" first answers with the diff of what would change (and the explain
box's verdict on the last query tried); the second "save", carrying the
token of that review for the same draft, hands it to
`api.store.services.tenant_put` with the version the page was loaded with.
"view-yaml"/"view-form" switch views carrying the draft across, with its
validation errors on their lines or fields; the structural buttons (add,
remove, move) edit the draft and show it again without saving; "explain"
runs the draft through the same explain selector as the REST API, so what
the box says is what the scheduler will do.
"""

from __future__ import annotations

import math
import time
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from api.rest.views.explain import actor_body, known_queriers, queriers_body
from api.store import selectors, services
from api.store.exceptions import ConfigValidationError, NotFound, VersionConflict
from api.store.import_plan import tenant_id_errors, validate_tenant
from api.store.models import ConfigRevision, Tenant
from dashboard.access import current_tick, editor_required, forbidden, page, role_required
from dashboard.forms import EditorAction, apply_action, editor_model
from dashboard.tenant_draft import FORM, YAML, Draft, draft_from_post, review_token
from dashboard.tenant_review import review_context, views_context
from dashboard.views import STALE, posted_version
from dashboard.views_rules import default_shares, dry_run_box
from scheduler_core.bounds import request_times_error
from scheduler_core.classify import EXPRESSION_API_TYPES, parses
from scheduler_core.errors import FieldError
from scheduler_core.model import API_TYPES
from scheduler_core.validation import (
    InvalidDuration,
    format_duration,
    parse_duration,
    validate_tenant_config,
)

__all__ = ["explain", "tenant_delete", "tenant_edit", "tenant_new", "tenants"]

UI = ConfigRevision.Source.UI
EXPLAIN_FIELDS = (
    "query",
    "api_type",
    "start",
    "end",
    "step",
    "user_agent",
    "dashboard_uid",
    "panel_id",
    "actor_path",
)
EXPLAIN_DEFAULTS = {"api_type": "query_range", "start": "1h", "end": "0s", "step": "30s"}


@role_required
def tenants(request: HttpRequest) -> HttpResponse:
    """Configured tenants with their live queue depth and rule count."""
    search = request.GET.get("search", "").strip()
    paginator = Paginator(selectors.tenant_list(search=search or None), 50)
    chunk = paginator.get_page(request.GET.get("page"))
    tick = current_tick()
    leaves = tick.index.tenant_leaves if tick else {}
    rows = []
    shares = default_shares((t.tenant_id, t.config) for t in chunk)
    for tenant in chunk:
        qp = tenant.config.get("query_priority") or {}
        rows.append(
            {
                "tenant": tenant,
                "depth": sum(leaf.length for leaf in leaves.get(tenant.tenant_id, ())),
                "rules": len(qp.get("priorities") or []),
                "enabled": bool(qp.get("enabled")),
                "default_share": shares.get(tenant.tenant_id),
            }
        )
    context = {
        "rows": rows,
        "page_obj": chunk,
        "search": search,
        "live": tick is not None,
        "default_outstanding": selectors.queue_config_get().max_outstanding_requests_per_tenant,
    }
    return page(request, "dashboard/tenants.html", context)


def _explain_inputs(post: Any) -> dict[str, str]:
    return {k: post.get(f"explain_{k}", EXPLAIN_DEFAULTS.get(k, "")) for k in EXPLAIN_FIELDS}


# The explain box's duration fields, by the label the page shows.
_DURATIONS = (("start", "Start (ago)"), ("end", "End (ago)"), ("step", "Step"))


def _run_explain(tenant_id: str, draft: dict[str, Any], inputs: dict[str, str]) -> dict[str, Any]:
    """The explain box's content for a draft block and a sample request."""
    now = time.time()
    if not inputs["query"].strip():
        return {"problem": "Type a query to explain."}
    spans: dict[str, float | None] = {}
    for key, label in _DURATIONS:
        try:
            spans[key] = parse_duration(inputs[key]) if inputs[key].strip() else None
        except InvalidDuration as exc:
            return {"problem": f"{label}: {exc}"}
    start, end, step = (
        None if spans["start"] is None else now - spans["start"],
        None if spans["end"] is None else now - spans["end"],
        spans["step"],
    )
    # The same check as enqueue's on both protocols and the REST explain's.
    times = request_times_error(start, end, step)
    if times is not None:
        return {"problem": f"Time range: {times.message}."}
    if inputs["api_type"] not in API_TYPES:
        return {"problem": f"Unknown API type {inputs['api_type']!r}."}
    headers = {
        "User-Agent": inputs["user_agent"],
        "X-Dashboard-Uid": inputs["dashboard_uid"],
        "X-Panel-Id": inputs["panel_id"],
    }
    try:
        found = selectors.query_explain(
            tenant_id=tenant_id,
            query=inputs["query"],
            api_type=inputs["api_type"],
            start=start,
            end=end,
            step=step,
            headers={k: v for k, v in headers.items() if v},
            now=now,
            draft_config=draft,
        )
    except ConfigValidationError as exc:
        return {"problem": f"Fix the {len(exc.errors)} error(s) in the rules first."}
    config = selectors.queue_config_get()
    actor = actor_body({config.actor_path_header: inputs["actor_path"]}, config)
    # Classification reads the query's selectors; one it cannot parse reads
    # unknown data, which the page says rather than leave "unknown" unexplained.
    unparsed = inputs["api_type"] in EXPRESSION_API_TYPES and not parses(inputs["query"])
    return {**_explanation(found, draft), "actor": actor, "unparsed": unparsed}


def _ago_text(seconds: float) -> str:
    """A span back from now, to the second: the select range's milliseconds are noise here."""
    return format_duration(round(seconds) if math.isfinite(seconds) and seconds >= 1 else seconds)


def _explanation(found: Any, draft: dict[str, Any]) -> dict[str, Any]:
    match, rejection = found.match, found.rejection
    rules: dict[int, dict[str, Any]] = {}
    general = []
    levels = [p.priority for p in found.limits.query_priority.priorities]
    for reason in match.reasons:
        if reason.rule_index is None:
            general.append(reason)
            continue
        rule = rules.setdefault(
            reason.rule_index,
            {"index": reason.rule_index, "priority": levels[reason.rule_index], "reasons": []},
        )
        rule["reasons"].append(reason)
    select = found.select_range
    return {
        "component": found.component,
        "select": None
        if select is None
        else (_ago_text(found.now - select[0]), _ago_text(found.now - select[1])),
        "priority": match.priority,
        "source": match.source,
        "rule_index": match.rule_index,
        "attribute_index": match.attribute_index,
        "rules": [rules[i] for i in sorted(rules)],
        "general": general,
        "queriers": queriers_body(found.limits, known_queriers()),
        "rejected_by": rejection.attribute_index if rejection is not None else None,
        "rejection_reasons": list(rejection.reasons) if rejection is not None else [],
    }


_ALREADY_EXISTS = FieldError("tenant_id", "a tenant with this ID already exists")


def _render_editor(
    request: HttpRequest,
    *,
    tenant_id: str | None,
    config: dict[str, Any],
    version: int | None,
    errors: list[FieldError] | tuple[FieldError, ...] = (),
    explained: dict[str, Any] | None = None,
    status: int = 200,
    is_new: bool = False,
    view: str = FORM,
    draft: Draft | None = None,
    review: dict[str, Any] | None = None,
    saving: bool = False,
    dry_run: dict[str, Any] | None = None,
    show_hits: bool = False,
) -> HttpResponse:
    context = {
        "tenant_id": tenant_id,
        # The ID in the page's links, once it is one a URL can carry: a new
        # tenant's refused ID (say "a/b") is shown with its error, not routed.
        "url_tenant": tenant_id if tenant_id and not tenant_id_errors(tenant_id) else None,
        "tenant_id_errors": [e.message for e in errors if e.path == "tenant_id"],
        # What a blank limit means: the scheduler setting's value now.
        "outstanding_label": "Max outstanding requests (blank = the setting, now "
        f"{selectors.queue_config_get().max_outstanding_requests_per_tenant})",
        # A review step's page keeps the note typed before it.
        "message": request.POST.get("message", ""),
        "is_new": is_new,
        "version": version,
        "editor": editor_model(config, list(errors)),
        "explain_inputs": _explain_inputs(request.POST),
        "explained": explained,
        "api_types": API_TYPES,
        "review": review,
        "saving": saving,
        "dry_run": dry_run,
        # Hit counts belong to the saved rules, so they are shown beside those only.
        "show_hits": show_hits,
        **views_context(tenant_id, config, errors, view, draft),
    }
    return page(request, "dashboard/tenant_edit.html", context, status=status)


def _review(
    request: HttpRequest, tenant_id: str, draft: Draft, version: int | None, is_new: bool
) -> HttpResponse | None:
    """The first Save's answer (the diff), or None when this post confirms that review."""
    assert draft.config is not None
    config = draft.config
    show = {"tenant_id": tenant_id, "version": version, "is_new": is_new, "draft": draft}
    try:
        validate_tenant(tenant_id, config)
    except ConfigValidationError as exc:
        return _render_editor(
            request,
            config=config,
            errors=exc.errors,
            status=400,
            view=draft.view,
            saving=True,
            **show,
        )
    stored = Tenant.objects.filter(tenant_id=tenant_id).values_list("config", "version").first()
    current = None if stored is None else stored[1]
    if current != version:
        if is_new:
            messages.error(request, f"A tenant {tenant_id} already exists; nothing was saved.")
        else:
            messages.error(request, STALE.format(current=current))
        taken = [_ALREADY_EXISTS] if is_new else []
        return _render_editor(
            request, config=config, errors=taken, status=409, view=draft.view, **show
        )
    if request.POST.get("reviewed") == review_token(tenant_id, version, config):
        return None
    inputs = _explain_inputs(request.POST)
    tried = inputs["query"].strip()
    review = review_context(
        tenant_id=tenant_id,
        version=version,
        stored=None if stored is None else stored[0],
        config=config,
        query=tried,
        with_draft=_run_explain(tenant_id, config, inputs) if tried else None,
        with_saved=_run_explain(tenant_id, stored[0], inputs) if tried and stored else None,
    )
    return _render_editor(request, config=config, view=draft.view, review=review, **show)


def _save(
    request: HttpRequest, tenant_id: str, reviewed: Draft, version: int | None, is_new: bool
) -> HttpResponse:
    answer = _review(request, tenant_id, reviewed, version, is_new)
    if answer is not None:
        return answer
    draft = reviewed.config or {}
    try:
        services.tenant_put(
            tenant_id=tenant_id,
            config=draft,
            expected_version=version,
            author=request.user,
            source=UI,
            message=request.POST.get("message", ""),
        )
    except ConfigValidationError as exc:
        return _render_editor(
            request,
            tenant_id=tenant_id,
            config=draft,
            version=version,
            errors=exc.errors,
            status=400,
            is_new=is_new,
            view=reviewed.view,
            draft=reviewed,
            saving=True,
        )
    except VersionConflict as exc:
        if is_new:
            messages.error(request, f"A tenant {tenant_id} already exists; nothing was saved.")
        else:
            messages.error(request, STALE.format(current=exc.current_version))
        return _render_editor(
            request,
            tenant_id=tenant_id,
            config=draft,
            version=version,
            errors=[_ALREADY_EXISTS] if is_new else [],
            status=409,
            is_new=is_new,
            view=reviewed.view,
            draft=reviewed,
        )
    messages.success(request, f"Saved {tenant_id}; the scheduler applies it now.")
    return redirect(reverse("dashboard:tenant", args=[tenant_id]))


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
        return _render_editor(request, config={}, view=YAML, status=status, **show)
    draft = posted.config
    if action == "save":
        return _save(request, tenant_id, posted, version, is_new)
    if action == "explain":
        explained = _run_explain(tenant_id, draft, _explain_inputs(request.POST))
        return _render_editor(request, config=draft, explained=explained, view=posted.view, **show)
    if action in ("view-yaml", "view-form"):
        view = YAML if action == "view-yaml" else FORM
        errors = validate_tenant_config(draft)
        return _render_editor(request, config=draft, errors=errors, view=view, **show)
    if action == "dry-run":
        box = dry_run_box(tenant_id, draft)
        return _render_editor(request, config=draft, dry_run=box, view=posted.view, **show)
    apply_action(draft, EditorAction(action))
    return _render_editor(request, config=draft, **show)


@role_required
def tenant_edit(request: HttpRequest, tenant_id: str) -> HttpResponse:
    """One tenant's limits and rules; viewers see them read-only."""
    if request.method == "POST":
        return _post(request, tenant_id, posted_version(request))
    try:
        tenant = selectors.tenant_get(tenant_id=tenant_id)
    except NotFound as exc:
        raise Http404(str(exc)) from exc
    return _render_editor(
        request,
        tenant_id=tenant_id,
        config=tenant.config,
        version=tenant.version,
        show_hits=True,
    )


@editor_required
def tenant_new(request: HttpRequest) -> HttpResponse:
    """Create a tenant (the version check is "must not exist yet")."""
    tenant_id = request.POST.get("tenant_id", "").strip()
    if request.method != "POST":
        return _render_editor(request, tenant_id="", config={}, version=None, is_new=True)
    if not tenant_id:
        # A pasted block's own key line names the new tenant.
        tenant_id = draft_from_post(request.POST).pasted_tenant or ""
    if not tenant_id and request.POST.get("action", "save") == "save":
        error = FieldError("tenant_id", "required")
        posted = draft_from_post(request.POST)
        return _render_editor(
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
        explained: dict[str, Any] = {"problem": "Fix the YAML first: it is no tenant block."}
    else:
        explained = _run_explain(tenant_id, posted.config, _explain_inputs(request.POST))
    return render(request, "dashboard/_explain.html", {"explained": explained})


@require_POST
@editor_required
def tenant_delete(request: HttpRequest, tenant_id: str) -> HttpResponse:
    try:
        services.tenant_delete(
            tenant_id=tenant_id,
            expected_version=posted_version(request),
            author=request.user,
            source=UI,
        )
    except VersionConflict as exc:
        messages.error(request, STALE.format(current=exc.current_version))
        return redirect(reverse("dashboard:tenant", args=[tenant_id]))
    except NotFound:
        messages.error(request, f"There is no tenant {tenant_id}.")
    else:
        messages.success(
            request, f"Deleted {tenant_id}; its queued work now uses the default limits."
        )
    return redirect("dashboard:tenants")
