"""The tenant editor page as rendered, and its Save: review first, then save.

`render_editor` answers every editor button with the page. The first
"save" answers with the diff of what would change (and the explain box's
verdict on the last query tried); the second, carrying the token of that
review for the same draft, hands it to `api.store.services.tenant_put` with
the version the page was loaded with. A stale version is refused, unless
the stored block is this operator's own save confirmed again (the
browser's Back), which is said so. Which button does what is
`dashboard.views_tenants`.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from api.store import selectors, services
from api.store.exceptions import ConfigValidationError, VersionConflict
from api.store.import_plan import tenant_id_errors, validate_tenant
from api.store.models import ConfigRevision, Tenant
from dashboard.access import page
from dashboard.explain_box import explain_inputs, run_explain, selector_lines
from dashboard.forms import editor_model
from dashboard.tenant_draft import FORM, Draft, review_token, spelled_as_saved
from dashboard.tenant_review import review_context, views_context
from dashboard.views import already_saved_message, own_revision, stale_message
from scheduler_core.errors import FieldError
from scheduler_core.model import API_TYPES

__all__ = ["render_editor", "save_draft"]

UI = ConfigRevision.Source.UI

_ALREADY_EXISTS = FieldError("tenant_id", "a tenant with this ID already exists")


def render_editor(
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
        "is_new": is_new,
        "version": version,
        "editor": editor_model(config, list(errors)),
        "explain_inputs": explain_inputs(request.POST),
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
) -> tuple[HttpResponse | None, dict[str, Any]]:
    """The first Save's answer (the diff), or None when this post confirms that review;
    and the block to save (`spelled_as_saved`: no field added at its unset value)."""
    assert draft.config is not None
    config = draft.config
    show = {"tenant_id": tenant_id, "version": version, "is_new": is_new, "draft": draft}
    try:
        validate_tenant(tenant_id, config)
    except ConfigValidationError as exc:
        # Untrimmed: a misspelt field at false must stay to be refused.
        answer = render_editor(
            request,
            config=config,
            errors=exc.errors,
            status=400,
            view=draft.view,
            saving=True,
            **show,
        )
        return answer, config
    stored = Tenant.objects.filter(tenant_id=tenant_id).values_list("config", "version").first()
    config = spelled_as_saved(
        config, None if stored is None else stored[0], form=draft.view == FORM
    )
    current = None if stored is None else stored[1]
    if current != version:
        mine = own_revision(request, current) if stored and stored[0] == config else None
        if mine:
            # The browser's Back to a review this operator then confirmed.
            messages.info(request, already_saved_message(mine))
            return redirect(reverse("dashboard:tenant", args=[tenant_id])), config
        if is_new:
            messages.error(request, f"A tenant {tenant_id} already exists; nothing was saved.")
        else:
            messages.error(request, stale_message(current))
        taken = [_ALREADY_EXISTS] if is_new else []
        answer = render_editor(
            request, config=config, errors=taken, status=409, view=draft.view, **show
        )
        return answer, config
    if request.POST.get("reviewed") == review_token(tenant_id, version, config):
        return None, config
    inputs = explain_inputs(request.POST)
    # A metadata call may be given by its selectors alone: their join is the
    # query the queue lists for it.
    tried = inputs["query"].strip() or ",".join(selector_lines(inputs["matchers"]))
    review = review_context(
        tenant_id=tenant_id,
        version=version,
        stored=None if stored is None else stored[0],
        config=config,
        query=tried,
        with_draft=run_explain(tenant_id, config, inputs) if tried else None,
        with_saved=run_explain(tenant_id, stored[0], inputs) if tried and stored else None,
        typed=None if draft.view == FORM else draft.config,
    )
    return render_editor(request, config=config, view=draft.view, review=review, **show), config


def save_draft(
    request: HttpRequest, tenant_id: str, reviewed: Draft, version: int | None, is_new: bool
) -> HttpResponse:
    answer, draft = _review(request, tenant_id, reviewed, version, is_new)
    if answer is not None:
        return answer
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
        return render_editor(
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
            messages.error(request, stale_message(exc.current_version))
        return render_editor(
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
