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
from api.store.services import ROLLBACK_NOTE_MAX
from dashboard.access import page, role_required
from dashboard.line_diff import MODES, UNIFIED, line_diff
from scheduler_core.bounds import parse_decimal

__all__ = [
    "PICKS",
    "compare",
    "compare_picks",
    "compare_request",
    "diff_mode",
    "history_rows",
    "kind_filter",
    "missing_picks",
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
        # Not `compare`: History's refused Compare would be asked again.
        query = {k: v for k, v in request.GET.items() if k not in ("diff", "compare")}
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
    """Each revision with its changed paths, its YAML line diff, and whether its
    tenant exists now (a deleted one's name is not a link to a 404)."""
    revisions = list(revisions)
    existing = selectors.tenant_configs([r.key for r in revisions if r.key])
    rows = []
    for revision in revisions:
        found = revision_comparison(revision)
        rows.append(
            {
                "revision": revision,
                "diff": found.diff,
                "tenant_exists": revision.key in existing,
                **_shown(found, mode),
            }
        )
    return rows


def _revision(raw: str | None) -> ConfigRevision | None:
    revision_id = parse_decimal(raw or "")
    if revision_id is None:
        return None
    try:
        return selectors.revision_get(revision_id=revision_id)
    except NotFound:
        return None


# History's two picks: the query parameter, and its label at the Compare control.
PICKS = (("from", "From"), ("to", "To"))
# What Compare with a pick missing says, by the picks missing (the page's
# script says the same in place: `missing_picks` puts these in the page).
MISSING = {
    ("from", "to"): "Pick two revisions to compare: one as From and one as To.",
    ("to",): "Pick a To revision as well: the From stays picked as you page and filter.",
    ("from",): "Pick a From revision as well: the To stays picked as you page and filter.",
}


def missing_picks() -> dict[str, str]:
    """`MISSING` keyed as the page's data attributes name them (both, from, to)."""
    return {names[0] if len(names) == 1 else "both": text for names, text in MISSING.items()}


def compare_picks(request: HttpRequest) -> tuple[dict[str, ConfigRevision], list[str]]:
    """The revisions picked as From and To on History, and what is wrong with the picks.

    They ride in History's URL (`from`, `to`: revision ids, as `compare/`
    takes them), so a From picked on page 1 is still picked on page 5 or
    after filtering. The Compare form carries both picks, and a row's From
    or To button submits it with its own value after them; `get` takes the
    last value given, so the press replaces the pick (or, its value empty
    when it is the pick already, drops it).
    """
    picks: dict[str, ConfigRevision] = {}
    errors = []
    for name, label in PICKS:
        raw = request.GET.get(name, "").strip()
        if not raw:
            continue
        revision = _revision(raw)
        if revision is None:
            errors.append(f"{label}: there is no revision with id “{raw}”; pick another")
        else:
            picks[name] = revision
    return picks, errors


def compare_request(request: HttpRequest, picks: dict[str, ConfigRevision]) -> tuple[str, str]:
    """History's Compare: the compare page's URL for two picks, else why not ("", message)."""
    missing = tuple(name for name, _ in PICKS if name not in picks)
    if missing:
        return "", MISSING[missing]
    query = {"from": picks["from"].pk, "to": picks["to"].pk}
    key = request.GET.get("key")
    if key:
        query["tenant"] = key
    query["diff"] = diff_mode(request)
    return f"{reverse('dashboard:history-compare')}?{urlencode(query)}", ""


@role_required
def compare(request: HttpRequest) -> HttpResponse:
    """The state after one picked revision against the state after another."""
    first = _revision(request.GET.get("from"))
    second = _revision(request.GET.get("to"))
    if first is None or second is None:
        message = MISSING[("from", "to")]
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
    request: HttpRequest, revision: ConfigRevision, notice: str = "", note_error: str = ""
) -> HttpResponse:
    """What rolling back `revision` would change, and the button that does it.

    The form carries the config version the diff was made at, so a change
    landing before the click shows the new diff instead of applying one
    nobody saw (`notice` says so, with 409). The change note typed is kept
    across either answer; `note_error` refuses it (400) at its box.
    """
    seen_version = selectors.config_version_get()
    preview = rollback_preview(revision)
    context = {
        "revision": revision,
        "seen_version": seen_version,
        "notice": notice,
        "note": request.POST.get("message", ""),
        "note_error": note_error,
        "note_max": ROLLBACK_NOTE_MAX,
        "mode_links": mode_links(request, request.path),
        **_shown(preview, diff_mode(request)),
    }
    status = 400 if note_error else 409 if notice else 200
    return page(request, "dashboard/confirm_rollback.html", context, status=status)
