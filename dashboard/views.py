"""Inspector, layout switch, history with rollback, and scheduler settings pages.

Views only translate: reads go through `api.store.selectors`, writes through
`api.store.services` (which validate, version-check and record revisions), and the
live queue through the broadcaster's projections. Every write is a POST with
CSRF and the version the page was loaded with, so a stale page is refused.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from api.store import selectors, services
from api.store.exceptions import ConfigValidationError, NotFound, VersionConflict
from api.store.models import ConfigRevision
from dashboard.access import current_tick, editor_required, forbidden, page, role_required
from dashboard.drill import MAX_ROWS as DRILL_MAX_ROWS
from dashboard.forms import errors_by_path, settings_from_post
from dashboard.live import Tick
from dashboard.projections import (
    PROJECTIONS,
    InvalidViewParams,
    ViewParams,
    build_header,
    build_tree,
)
from dashboard.querier_view import build_queriers
from dashboard.settings_view import (
    DRAFT,
    draft_context,
    fields_context,
    review_or_none,
    stored_refused,
    unchanged,
)
from dashboard.views_history import (
    PICKS,
    compare_picks,
    compare_request,
    diff_mode,
    history_rows,
    kind_filter,
    missing_picks,
    mode_links,
    rollback_confirm,
    tenant_search,
)
from scheduler_core.bounds import parse_decimal
from scheduler_core.model import COMPONENTS
from scheduler_core.validation import queue_config_to_dict

__all__ = [
    "already_saved_message",
    "history",
    "inspector",
    "layout_switch",
    "own_revision",
    "posted_version",
    "rollback",
    "settings_page",
    "stale_message",
]

UI = ConfigRevision.Source.UI
PICK_NAMES = tuple(name for name, _ in PICKS)
# Operator cancels listed under the revisions on the History page, newest first.
OPERATOR_CANCELS_SHOWN = 50


def stale_message(current: int | None) -> str:
    """Why a save was refused: the version moved (`current`), or the tenant is gone (None)."""
    if current is None:
        return (
            "Someone deleted this tenant since you loaded this page. Nothing was saved: "
            "History lists the deletion (and can roll it back)."
        )
    return (
        f"Someone saved a change since you loaded this page (now version {current}). "
        "Nothing was saved: open the page again from its link to see their change "
        "(History lists it), then edit again. (The browser's reload would send this "
        "form again, at the old version.)"
    )


def own_revision(request: HttpRequest, version: int | None) -> ConfigRevision | None:
    """The revision at `version`, if this user wrote it from these pages.

    A stale form whose draft is what that revision left in place is this
    operator's own save sent again (the browser's Back to Save's review,
    then Confirm), not someone else's change: said so, nothing is saved.
    """
    if version is None:
        return None
    return ConfigRevision.objects.filter(version=version, author=request.user, source=UI).first()


def already_saved_message(revision: ConfigRevision) -> str:
    return (
        f"You already saved this change: it is revision #{revision.version} (History lists "
        "it), so nothing was saved again. This page shows it as saved now."
    )


def posted_version(request: HttpRequest) -> int | None:
    """The form's `version` (the ETag it was rendered at), or None if it is not one."""
    return parse_decimal(request.POST.get("version", ""))


def _params(request: HttpRequest, running_layout: str) -> ViewParams:
    """The view asked for in the URL; the projection defaults to the running layout."""
    query = request.GET
    raw: dict[str, Any] = {"projection": query.get("projection") or running_layout}
    raw["search"] = query.get("search", "")
    page = parse_decimal(query.get("page", ""))
    if page is not None:
        raw["page"] = page
    if raw["projection"] == "component-first":
        raw["expanded"] = [f"c:{component}" for component in COMPONENTS]
    try:
        return ViewParams.from_message(raw)
    except InvalidViewParams:
        return ViewParams()


def _queriers(tick: Tick) -> dict[str, Any]:
    owners = tick.replicas.querier_replicas if tick.replicas is not None else None
    return build_queriers(tick.index.snapshot, owners)


@role_required
def inspector(request: HttpRequest) -> HttpResponse:
    """The live tree, server-rendered first; the page's JS then keeps it live."""
    running_layout = selectors.queue_config_get().layout
    params = _params(request, running_layout)
    tick = current_tick()
    context: dict[str, Any] = {
        "params": params,
        "projections": PROJECTIONS,
        "running_layout": running_layout,
        "tree": build_tree(tick.index, params) if tick else None,
        "header": build_header(tick.index, None) if tick else None,
        "queriers": _queriers(tick) if tick else None,
        "frontends": tick.frontends_panel if tick else None,
        "drill_max_rows": DRILL_MAX_ROWS,
    }
    return page(request, "dashboard/inspector.html", context)


@editor_required
def layout_switch(request: HttpRequest) -> HttpResponse:
    """Switch the running layout; asks to confirm unless the form said so.

    Opened as a page (a bookmark, the address bar after a post), it is the
    inspector, where the switch is: a bare 405 page left the operator nowhere.
    """
    if request.method != "POST":
        return redirect("dashboard:inspector")
    layout = request.POST.get("layout", "")
    # The layout the page showed running: the switch is "from it to `layout`".
    # (The settings version it was rendered at went stale with any change to
    # any setting, so a tab open for a while could not switch at all.)
    running = request.POST.get("running", "")
    if request.POST.get("confirm") != "yes":
        return page(
            request, "dashboard/confirm_layout.html", {"layout": layout, "running": running}
        )
    now = selectors.queue_config_get().layout
    if running != now:
        messages.error(
            request,
            f"The scheduler runs the {now} layout now (it was switched meanwhile); "
            "nothing changed.",
        )
        return redirect("dashboard:inspector")
    try:
        services.settings_update(
            changes={"layout": layout},
            expected_version=None,
            author=request.user,
            source=UI,
            message=f"layout switched to {layout} from the inspector",
        )
    except ConfigValidationError as exc:
        messages.error(request, f"Layout not switched: {exc}")
    else:
        messages.success(request, f"The scheduler now runs the {layout} layout.")
    return redirect("dashboard:inspector")


@role_required
def history(request: HttpRequest) -> HttpResponse:
    """Revisions, newest first, each with its diff, author, source and rollback."""
    kind, kind_errors = kind_filter(request)
    # One tenant exactly, as a link to its history names it; the page's
    # tenant box sends `search` instead. Either lists the imports (and their
    # rollbacks) that changed the tenant too: their key is empty, and the
    # history of a tenant an import deleted showed nothing of it.
    key = request.GET.get("key") or None
    search, search_errors = tenant_search(request)
    found = selectors.revision_list(kind=kind or None, changed=key, changed_part=search)
    # A filter that can match nothing (a search no tenant ID can contain, an
    # unknown kind) lists nothing rather than every revision: the operator
    # reads the error, not rows they did not ask for.
    refused = [
        name for name, errors in (("tenant", search_errors), ("kind", kind_errors)) if errors
    ]
    picks, pick_errors = compare_picks(request)
    compare_problem = ""
    if "compare" in request.GET:
        target, compare_problem = compare_request(request, picks)
        if target:
            return redirect(target)
    paginator = Paginator(found.none() if refused else found, 25)
    revisions = paginator.get_page(request.GET.get("page"))
    rows = history_rows(revisions, diff_mode(request))
    context = {"rows": rows, "page_obj": revisions, "kind": kind, "key": key or ""}
    context.update(search=search, search_errors=search_errors)
    context.update(kind_errors=kind_errors, refused=refused)
    context.update(_picks_context(picks))
    context.update(pick_errors=pick_errors, compare_problem=compare_problem)
    context["missing_picks"] = missing_picks()
    context["mode_links"] = mode_links(request, request.path)
    context["kinds"] = ConfigRevision.Kind.choices
    context["operator_cancels"] = selectors.operator_cancel_list()[:OPERATOR_CANCELS_SHOWN]
    # The pager's links keep the filters, the picks and the diff mode.
    kept = urlencode(_given(request, "page", "compare"))
    context["query"] = f"{kept}&" if kept else ""
    # The same, without a link's one tenant (`key`): its chip's way out.
    context["unkeyed"] = urlencode(_given(request, "page", "compare", "key"))
    # Compare carries the rest of the page's state; "clear picks" drops only the picks.
    unpicked = _given(request, "compare", *PICK_NAMES)
    context.update(unpicked_query=unpicked, clear_picks=urlencode(unpicked))
    bad = refused or pick_errors or compare_problem
    return page(request, "dashboard/history.html", context, status=400 if bad else 200)


def _given(request: HttpRequest, *dropped: str) -> list[tuple[str, str]]:
    """The page's query parameters that hold a value, but `dropped`."""
    return [(k, v) for k, v in request.GET.items() if v and k not in dropped]


def _picks_context(picks: dict[str, ConfigRevision]) -> dict[str, Any]:
    """Each pick as the Compare control shows it (the form carries both, listed here or not)."""
    return {
        "picks": [
            {"name": name, "label": label, "revision": picks.get(name)} for name, label in PICKS
        ],
        "picked_from": picks["from"].pk if "from" in picks else None,
        "picked_to": picks["to"].pk if "to" in picks else None,
    }


@editor_required
def rollback(request: HttpRequest, revision_id: int) -> HttpResponse:
    """Restore the state before a revision, as a new revision, once its diff was seen.

    A GET, or a POST without `confirm=yes`, shows the diff the rollback would
    apply (the current state against the restored one) and asks to confirm.
    """
    seen = parse_decimal(request.POST.get("seen_version", ""))
    if request.method != "POST" or request.POST.get("confirm") != "yes" or seen is None:
        return _rollback_preview_or_back(request, revision_id)
    try:
        restored = services.revision_rollback(
            revision_id=revision_id,
            author=request.user,
            expected_config_version=seen,
            note=request.POST.get("message", ""),
        )
    except NotFound:
        messages.error(request, f"There is no revision {revision_id}.")
    except VersionConflict as exc:
        # The diff confirmed is not what the rollback would now apply.
        notice = (
            f"The config changed since that diff was shown (now version "
            f"{exc.current_version}); review it again."
        )
        return _rollback_preview_or_back(request, revision_id, notice)
    except ConfigValidationError as exc:
        refused_note = [e.message for e in exc.errors if e.path == "note"]
        if refused_note:  # said at its box, with the note kept to shorten
            problem = f"{refused_note[0]}; nothing changed"
            return _rollback_preview_or_back(request, revision_id, note_error=problem)
        messages.error(request, f"That state no longer validates, nothing changed: {exc}")
    else:
        if restored is None:
            messages.info(request, "That state is already the current one; nothing changed.")
        else:
            messages.success(request, f"Rolled back: new revision #{restored.version}.")
    return redirect("dashboard:history")


def _rollback_preview_or_back(
    request: HttpRequest, revision_id: int, notice: str = "", note_error: str = ""
) -> HttpResponse:
    try:
        target = selectors.revision_get(revision_id=revision_id)
    except NotFound:
        messages.error(request, f"There is no revision {revision_id}.")
        return redirect("dashboard:history")
    return rollback_confirm(request, target, notice, note_error)


@role_required
def settings_page(request: HttpRequest) -> HttpResponse:
    """Scheduler settings; editors may save them (version-checked)."""
    row = selectors.settings_get()
    running, refused = selectors.settings_as_run(row.config)
    current = queue_config_to_dict(running)
    runs = dict(current)  # `current` takes a refused draft below; the boxes' running values do not
    # Said on every answer, saves refused or stale included: until a save
    # lands, the stored settings are still not what runs.
    stored = stored_refused(row.config, current, refused)
    errors: dict[str, list[str]] = {}
    status = 200
    if request.method == "POST":
        if request.role != "editor":  # type: ignore[attr-defined]
            return forbidden(request, "Changing settings needs the editor role.")
        if request.POST.get("action") == DRAFT:  # its own draft, back from Simulate
            context = draft_context(request.POST, posted_version(request), running, stored)
            return page(request, "dashboard/settings.html", context)
        changes = settings_from_post(request.POST)
        if posted_version(request) is None:
            # Saved with no version, the stale check had nothing to compare and
            # the review was skipped: the page always posts its version.
            messages.error(request, "This form came without its version: open Settings again.")
            draft = fields_context({**current, **changes}, {}, stored, runs)
            context = {"version": row.version, **draft}
            return page(request, "dashboard/settings.html", context, status=400)
        reviewed = request.POST.get("reviewed")
        review = review_or_none(posted_version(request), row.version, changes, reviewed)
        if review is not None:
            context = {"version": row.version, "review": review}
            context.update(fields_context({**current, **changes}, {}, stored, runs))
            return page(request, "dashboard/settings.html", context)
        try:
            services.settings_update(
                changes=changes,
                expected_version=posted_version(request),
                author=request.user,
                source=UI,
                message=request.POST.get("message", ""),
            )
        except VersionConflict as exc:
            mine = own_revision(request, row.version) if unchanged(changes, current) else None
            if mine:
                # The browser's Back to a review this operator then confirmed.
                messages.info(request, already_saved_message(mine))
                return redirect("dashboard:settings")
            messages.error(request, stale_message(exc.current_version))
            current.update(changes)
            status = 409
        except ConfigValidationError as exc:
            errors = errors_by_path(exc.errors)
            current.update(changes)
            status = 400
        else:
            messages.success(request, "Settings saved; the scheduler applies them now.")
            return redirect("dashboard:settings")
    context = {"version": row.version, **fields_context(current, errors, stored, runs)}
    return page(request, "dashboard/settings.html", context, status=status)
