"""What the tenant editor's YAML view and its Save review show (template context).

The YAML view shows the posted text as typed (so a paste is never
reformatted under the user's hands) or, when switching from the form, the
draft as the export would write it; each validation error goes on the
line its field path names there, and each Cortex limit the scheduler does
not use is listed with its line as "not used here". The review shown by
the first Save is the YAML diff of the tenant's block (saved -> draft),
the changed field paths, the fields typed in the YAML view that Save
leaves out as unset (`tenant_draft.spelled_as_saved`: a pasted
`default_priority: 0` the saved block lacks adds nothing, and the review
says so rather than drop it without a word), and the explain box's verdict
on the last query tried, with the draft and with the saved config.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from api.store.config_yaml import tenant_block_yaml
from api.store.diff import structural_diff
from dashboard.line_diff import UNIFIED, line_diff
from dashboard.tenant_draft import YAML, Draft, review_token, yaml_errors, yaml_for
from scheduler_core.errors import FieldError

__all__ = ["review_context", "settings_review", "views_context"]


def views_context(
    tenant_id: str | None,
    config: Mapping[str, Any],
    errors: Sequence[FieldError],
    view: str,
    draft: Draft | None,
) -> dict[str, Any]:
    """The two views' shared context: which view, its YAML text, errors by line, notices."""
    typed = draft is not None and draft.view == YAML and draft.text is not None
    text = draft.text if typed and draft is not None else yaml_for(tenant_id, config)
    located = []
    if view == YAML:
        syntax = draft.syntax if typed and draft is not None else None
        problems = [syntax] if syntax else yaml_errors(text or "", errors)
        located = [{"path": p.path, "message": p.message, "line": p.line} for p in problems]
    ignored = draft.ignored if draft is not None else []
    pasted = draft.pasted_tenant if draft is not None else None
    return {
        "view": view,
        "yaml_text": text or "",
        "yaml_errors": located,
        "ignored": [{"name": n.name, "line": n.line} for n in ignored],
        "pasted_tenant": pasted if pasted not in (None, tenant_id) else None,
    }


def _verdict(explained: dict[str, Any] | None) -> dict[str, Any] | None:
    if not explained or "problem" in explained:
        return explained
    rejected_by = explained.get("rejected_by")
    if rejected_by is not None:
        # Rejection is judged before priority: such a request is answered 422
        # and never queued, so the priority the rules would give it means nothing.
        how = f"query rejection attribute {rejected_by + 1}"
        return {"rejected": True, "how": how, "component": explained["component"]}
    source = explained["source"]
    if source == "rule":
        how = f"rule {explained['rule_index'] + 1}, attribute {explained['attribute_index'] + 1}"
    elif source == "default":
        how = "default priority: no rule matched"
    else:
        how = "priority disabled"
    return {
        "rejected": False,
        "priority": explained["priority"],
        "how": how,
        "component": explained["component"],
    }


def review_context(
    *,
    tenant_id: str,
    version: int | None,
    stored: Mapping[str, Any] | None,
    config: Mapping[str, Any],
    query: str,
    with_draft: dict[str, Any] | None,
    with_saved: dict[str, Any] | None,
    typed: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The first Save's answer: what will change, and what it does to the last query tried.

    `typed`: the YAML view's draft before `spelled_as_saved` made `config`
    of it; the fields it has and `config` lacks are `left_out`. None for
    the form's, which posts every box it shows: its unset fields were never
    typed, and naming them would list them on every save.
    """
    before = tenant_block_yaml(tenant_id, stored)
    after = tenant_block_yaml(tenant_id, config)
    return {
        "token": review_token(tenant_id, version, dict(config)),
        "diff": line_diff(before, after, UNIFIED),
        "paths": structural_diff(dict(stored or {}), dict(config)),
        "left_out": _left_out(config, typed),
        "creates": stored is None,
        "query": query,
        "draft_verdict": _verdict(with_draft),
        "saved_verdict": _verdict(with_saved),
    }


def _left_out(config: Mapping[str, Any], typed: Mapping[str, Any] | None) -> list[str]:
    """The paths of the fields `typed` has that the trimmed `config` left out.

    A block left out whole (`query_priority: {enabled: false}`) is named
    once, by its own path, as the structural diff reports a field absent on
    one side.
    """
    if typed is None:
        return []
    return [c.path for c in structural_diff(dict(config), dict(typed)) if c.before is None]


def settings_review(
    before_yaml: str, after_yaml: str, token: str, paths: list[Any]
) -> dict[str, Any]:
    """The settings page's first Save: the YAML diff of every setting."""
    return {
        "token": token,
        "diff": line_diff(before_yaml, after_yaml, UNIFIED),
        "paths": paths,
        "creates": False,
    }
