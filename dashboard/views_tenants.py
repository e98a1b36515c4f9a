"""Tenants list, tenant editor (limits and ordered priority rules) and explain box.

The editor posts the whole draft on every button: "save" hands it to
`api.store.services.tenant_put` with the version the page was loaded with; the
structural buttons (add, remove, move) edit the draft and show it again
without saving; "explain" runs the draft through the same explain selector
as the REST API, so what the box says is what the scheduler will do.
"""

from __future__ import annotations

import time
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from api.rest.views.explain import known_queriers, queriers_body
from api.store import selectors, services
from api.store.exceptions import ConfigValidationError, NotFound, VersionConflict
from api.store.models import ConfigRevision
from dashboard.access import current_tick, editor_required, forbidden, page, role_required
from dashboard.forms import EditorAction, apply_action, editor_model, tenant_config_from_post
from dashboard.views import STALE
from dashboard.views_rules import default_shares, dry_run_box
from scheduler_core.errors import FieldError
from scheduler_core.model import API_TYPES
from scheduler_core.validation import InvalidDuration, format_duration, parse_duration

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
    context = {"rows": rows, "page_obj": chunk, "search": search, "live": tick is not None}
    return page(request, "dashboard/tenants.html", context)


def _explain_inputs(post: Any) -> dict[str, str]:
    return {k: post.get(f"explain_{k}", EXPLAIN_DEFAULTS.get(k, "")) for k in EXPLAIN_FIELDS}


def _ago(text: str, now: float) -> float | None:
    return now - parse_duration(text) if text.strip() else None


def _run_explain(tenant_id: str, draft: dict[str, Any], inputs: dict[str, str]) -> dict[str, Any]:
    """The explain box's content for a draft block and a sample request."""
    now = time.time()
    try:
        start, end = _ago(inputs["start"], now), _ago(inputs["end"], now)
        step = parse_duration(inputs["step"]) if inputs["step"].strip() else None
    except InvalidDuration as exc:
        return {"problem": f"Time range: {exc}"}
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
    return _explanation(found, draft)


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
        else (format_duration(found.now - select[0]), format_duration(found.now - select[1])),
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
    dry_run: dict[str, Any] | None = None,
    show_hits: bool = False,
) -> HttpResponse:
    context = {
        "tenant_id": tenant_id,
        "is_new": is_new,
        "version": version,
        "editor": editor_model(config, list(errors)),
        "explain_inputs": _explain_inputs(request.POST),
        "explained": explained,
        "api_types": API_TYPES,
        "dry_run": dry_run,
        # Hit counts belong to the saved rules, so they are shown beside those only.
        "show_hits": show_hits,
    }
    return page(request, "dashboard/tenant_edit.html", context, status=status)


def _save(
    request: HttpRequest, tenant_id: str, draft: dict[str, Any], version: int | None, is_new: bool
) -> HttpResponse:
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
        )
    except VersionConflict as exc:
        if is_new:
            messages.error(request, f"A tenant {tenant_id} already exists; nothing was saved.")
        else:
            messages.error(request, STALE.format(current=exc.current_version))
        return _render_editor(
            request, tenant_id=tenant_id, config=draft, version=version, status=409, is_new=is_new
        )
    messages.success(request, f"Saved {tenant_id}; the scheduler applies it now.")
    return redirect(reverse("dashboard:tenant", args=[tenant_id]))


def _post(
    request: HttpRequest, tenant_id: str, version: int | None, is_new: bool = False
) -> HttpResponse:
    draft = tenant_config_from_post(request.POST)
    action = request.POST.get("action", "save")
    if action == "save":
        if request.role != "editor":  # type: ignore[attr-defined]
            return forbidden(request, "Saving needs the editor role.")
        return _save(request, tenant_id, draft, version, is_new)
    if action == "explain":
        explained = _run_explain(tenant_id, draft, _explain_inputs(request.POST))
        return _render_editor(
            request,
            tenant_id=tenant_id,
            config=draft,
            version=version,
            explained=explained,
            is_new=is_new,
        )
    if action == "dry-run":
        return _render_editor(
            request,
            tenant_id=tenant_id,
            config=draft,
            version=version,
            dry_run=dry_run_box(tenant_id, draft),
            is_new=is_new,
        )
    apply_action(draft, EditorAction(action))
    return _render_editor(
        request, tenant_id=tenant_id, config=draft, version=version, is_new=is_new
    )


def _version(request: HttpRequest) -> int | None:
    text = request.POST.get("version", "")
    return int(text) if text.isdigit() else None


@role_required
def tenant_edit(request: HttpRequest, tenant_id: str) -> HttpResponse:
    """One tenant's limits and rules; viewers see them read-only."""
    if request.method == "POST":
        return _post(request, tenant_id, _version(request))
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
    if not tenant_id and request.POST.get("action", "save") == "save":
        error = FieldError("tenant_id", "required")
        draft = tenant_config_from_post(request.POST)
        return _render_editor(
            request,
            tenant_id="",
            config=draft,
            version=None,
            errors=[error],
            status=400,
            is_new=True,
        )
    return _post(request, tenant_id, None, is_new=True)


@require_POST
@role_required
def explain(request: HttpRequest, tenant_id: str) -> HttpResponse:
    """The explain box as an HTML fragment, for the editor's script."""
    draft = tenant_config_from_post(request.POST)
    explained = _run_explain(tenant_id, draft, _explain_inputs(request.POST))
    return render(request, "dashboard/_explain.html", {"explained": explained})


@require_POST
@editor_required
def tenant_delete(request: HttpRequest, tenant_id: str) -> HttpResponse:
    try:
        services.tenant_delete(
            tenant_id=tenant_id, expected_version=_version(request), author=request.user, source=UI
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
