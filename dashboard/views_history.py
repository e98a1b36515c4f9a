"""History as a reviewer reads it: each revision's YAML line diff, compare any two, rollback's diff.

Every diff here is the YAML of the scope the revision changed (a tenant's
block as under `overrides:`, the scheduler settings, or an import's
`overrides:`) from `api.store.revision_states`, drawn by
`dashboard.line_diff` unified or side by side (`?diff=split`), long
unchanged runs folded; the changed field paths are listed beside it. The
same comparison answers `GET /api/v1/revisions/compare/`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from api.store import selectors
from api.store.exceptions import NotFound
from api.store.import_plan import tenant_id_part_errors
from api.store.models import ConfigRevision
from api.store.revision_states import (
    Comparison,
    Scope,
    compare_revisions,
    revision_comparison,
    rollback_preview,
)
from dashboard.access import page, role_required
from dashboard.line_diff import MODES, UNIFIED, line_diff
from scheduler_core.bounds import parse_decimal

__all__ = [
    "compare",
    "diff_mode",
    "history_rows",
    "kind_filter",
    "mode_links",
    "rollback_confirm",
    "tenant_search",
]


def diff_mode(request: HttpRequest) -> str:
    """Unified (the default) or split, as the page's switch asks."""
    mode = request.GET.get("diff", UNIFIED)
    return mode if mode in MODES else UNIFIED


def tenant_search(request: HttpRequest) -> tuple[str, list[str]]:
    """The tenant box's text (part of a tenant ID, any case) and what is wrong with it.

    Trimmed, unlike the API's `search`: spaces around a pasted ID are not
    part of what the operator looks for.
    """
    text = request.GET.get("search", "").strip()
    return text, [e.message for e in tenant_id_part_errors(text, "search")]


def kind_filter(request: HttpRequest) -> tuple[str, list[str]]:
    """The kind asked for ("" for any) and what is wrong with it.

    The page's select offers only real kinds, but a link or an edited URL
    can name another: filtered by it, the page listed nothing without a
    word, as if no such change had been made.
    """
    kind = request.GET.get("kind", "")
    kinds = ConfigRevision.Kind.values
    if not kind or kind in kinds:
        return kind, []
    return kind, [f"unknown kind “{kind}”: the kinds are {', '.join(kinds)}"]


def mode_links(request: HttpRequest, path: str) -> list[dict[str, Any]]:
    """The unified / side-by-side switch: the same page in each mode."""
    current = diff_mode(request)
    links = []
    for mode, label in ((UNIFIED, "Unified"), ("split", "Side by side")):
        query = {k: v for k, v in request.GET.items() if k != "diff"}
        query["diff"] = mode
        links.append(
            {"label": label, "href": f"{path}?{urlencode(query)}", "current": mode == current}
        )
    return links


def _shown(found: Comparison, mode: str) -> dict[str, Any]:
    return {
        "scope": found.scope,
        "paths": found.diff,
        "lines": line_diff(found.before_yaml, found.after_yaml, mode),
    }


def history_rows(revisions: Iterable[ConfigRevision], mode: str) -> list[dict[str, Any]]:
    """Each revision with its changed paths and its YAML line diff."""
    rows = []
    for revision in revisions:
        found = revision_comparison(revision)
        rows.append({"revision": revision, "diff": found.diff, **_shown(found, mode)})
    return rows


def _revision(raw: str | None) -> ConfigRevision | None:
    revision_id = parse_decimal(raw or "")
    if revision_id is None:
        return None
    try:
        return selectors.revision_get(revision_id=revision_id)
    except NotFound:
        return None


@role_required
def compare(request: HttpRequest) -> HttpResponse:
    """The state after one picked revision against the state after another."""
    first = _revision(request.GET.get("from"))
    second = _revision(request.GET.get("to"))
    if first is None or second is None:
        message = "Pick two revisions to compare: one as From and one as To."
        return page(request, "dashboard/history_compare.html", {"problem": message}, status=400)
    tenant = request.GET.get("tenant") or None
    scope = Scope("tenant", tenant) if tenant else None
    if first.version > second.version and request.GET.get("order") != "asis":
        # Picked newest first: show the change forwards in time.
        first, second = second, first
    found = compare_revisions(first, second, scope)
    context = {
        "first": first,
        "second": second,
        "mode_links": mode_links(request, reverse("dashboard:history-compare")),
        **_shown(found, diff_mode(request)),
    }
    return page(request, "dashboard/history_compare.html", context)


def rollback_confirm(
    request: HttpRequest, revision: ConfigRevision, notice: str = ""
) -> HttpResponse:
    """What rolling back `revision` would change, and the button that does it.

    The form carries the config version the diff was made at, so a change
    landing before the click shows the new diff instead of applying one
    nobody saw (`notice` says so, with 409).
    """
    seen_version = selectors.config_version_get()
    preview = rollback_preview(revision)
    context = {
        "revision": revision,
        "seen_version": seen_version,
        "notice": notice,
        "mode_links": mode_links(request, request.path),
        **_shown(preview, diff_mode(request)),
    }
    return page(request, "dashboard/confirm_rollback.html", context, status=409 if notice else 200)
