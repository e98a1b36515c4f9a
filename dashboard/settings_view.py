"""What the settings page shows: its fields, the review of a Save, and stored
settings that do not run.

Settings stored before validation got stricter (an upgrade) run as the
defaults, all of them (`selectors.settings_as_run`). The form shows what
runs, since a Save is made over that (`services.settings_update`) and an
operator reading the page must see what the scheduler does; each setting
whose stored value is not what runs says so at its box, with its error if
it is refused, so nothing stored is lost from sight. The review of a Save
diffs against the stored row, as the revision records it, so saving the
very defaults that run is a change to confirm (it replaces the stored row),
not "nothing to save".

A post with `action=draft` is the page's own unsaved form given back to it
(Simulate's way back): shown as it was, marked unsaved, at the version it
was first loaded with, so a Save from it still goes through the review and
is refused if anyone saved since.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from api.store import selectors
from api.store.config_yaml import settings_canonical, settings_yaml
from api.store.diff import structural_diff
from dashboard.forms import SETTINGS_FIELDS, errors_by_path, settings_from_post
from dashboard.settings_text import SETTINGS_TEXT
from dashboard.tenant_draft import review_token
from dashboard.tenant_review import settings_review
from scheduler_core.errors import ConfigInvalid, FieldError
from scheduler_core.model import QueueConfig
from scheduler_core.validation import (
    queue_config_from_dict,
    queue_config_to_dict,
    validate_queue_settings,
)

__all__ = [
    "DRAFT",
    "draft_context",
    "fields_context",
    "review_or_none",
    "stored_refused",
    "unchanged",
]

# The `action` of a post that only shows the form's draft again (see the module).
DRAFT = "draft"


def fields_context(
    config: dict[str, Any],
    errors: dict[str, list[str]],
    stored: dict[str, Any] | None,
    running: dict[str, Any],
) -> dict[str, Any]:
    """The form's boxes at `config`, with `errors` and, from `stored_refused`, the notes.

    `running`: the settings that run, as `queue_config_to_dict` spells them.
    Each box carries its running value, for the
    page's script to tell an unsaved draft from the settings that run
    (`static/dashboard/settings_leave.js`): a page rendered from a post
    holds the draft in its boxes, so what it was loaded with is no measure.
    """
    # The first refused setting takes the focus without the script's help, so
    # a refused save lands the operator on what to fix, as the editor does.
    first = next((k for k in SETTINGS_FIELDS if errors.get(k)), None)
    notes = stored["notes"] if stored else {}
    return {
        "fields": [
            {
                "name": k,
                "label": SETTINGS_TEXT[k][0],
                "help": SETTINGS_TEXT[k][1],
                "value": config.get(k, ""),
                "running": running.get(k, ""),
                "errors": errors.get(k, []),
                "focus": k == first,
                "stored": notes.get(k),
                "described_by": " ".join(
                    f"s-{k}-{part}"
                    for part, shown in (("err", errors.get(k)), ("stored", notes.get(k)))
                    if shown
                ),
            }
            for k in SETTINGS_FIELDS
        ],
        "error_count": sum(map(len, errors.values())),
        "stored_refused": stored,
    }


def stored_refused(
    stored: Any, running: dict[str, Any], errors: list[FieldError]
) -> dict[str, Any] | None:
    """The notice of stored settings the scheduler refused (`errors`), or None if none are.

    `errors`: every refused stored setting, each named with its message
    (one the form has no box for, say a setting since removed, too: a Save
    drops it). `notes`: by box, the stored value that is not what runs
    (refused, or valid but replaced with the rest by the defaults) and its
    errors, for the box to say so.
    """
    if not errors:
        return None
    row = stored if isinstance(stored, Mapping) else {}
    by_path = errors_by_path(errors)
    notes = {
        name: {"value": _shown(row[name]), "errors": by_path.get(name, [])}
        for name in SETTINGS_FIELDS
        if name in row and (name in by_path or _canonical(name, row[name]) != running[name])
    }
    listed = [
        {
            "path": path,
            "label": SETTINGS_TEXT[path][0] if path in SETTINGS_TEXT else "",
            "value": _shown(row[path]) if path in row else None,
            "message": "; ".join(messages),
        }
        for path, messages in by_path.items()
    ]
    return {"errors": listed, "notes": notes}


def _canonical(name: str, value: Any) -> Any:
    """A valid stored value as the scheduler spells it ("60s" is "1m"), else as stored."""
    try:
        return queue_config_to_dict(queue_config_from_dict({name: value}, QueueConfig()))[name]
    except ConfigInvalid:
        # Refused alone or with the defaults (a cross-field check): as stored.
        return value


def _shown(value: Any) -> str:
    """A stored value as the page writes it: text as it is, anything else as JSON."""
    return value if isinstance(value, str) and value else json.dumps(value)


def review_or_none(
    posted_version: int | None,
    version: int,
    changes: dict[str, Any],
    reviewed: str | None,
) -> dict[str, Any] | None:
    """The first Save's diff of every setting, or None to go on and save.

    None too when the changes are invalid or stale, so the save reports
    that exactly as it always has. The diff is from the stored settings,
    as the revision will record it: those differ from what runs when an
    upgrade's stricter rules refuse them.
    """
    base = selectors.queue_config_get()
    if posted_version != version or validate_queue_settings(changes, base):
        return None
    before = settings_canonical(selectors.settings_get().config)
    after = queue_config_to_dict(queue_config_from_dict(changes, base))
    token = review_token("(settings)", version, after)
    if reviewed == token:
        return None
    return settings_review(
        settings_yaml(before), settings_yaml(after), token, structural_diff(before, after)
    )


def unchanged(changes: dict[str, Any], current: dict[str, Any]) -> bool:
    """Whether saving `changes` would leave the settings as they are."""
    base = selectors.queue_config_get()
    if validate_queue_settings(changes, base):
        return False
    return queue_config_to_dict(queue_config_from_dict(changes, base)) == current


def draft_context(
    post: Mapping[str, str],
    version: int | None,
    running: QueueConfig,
    stored: dict[str, Any] | None,
) -> dict[str, Any]:
    """The page on its own unsaved form posted back (`DRAFT`), nothing saved.

    Each setting the draft holds that a Save would refuse (over `running`,
    the settings the page read, as a Save is made) is marked at its box
    now, as the tenant editor marks a draft switched between its views:
    coming back is when the operator reads the page again.
    """
    changes = settings_from_post(post)
    errors = errors_by_path(validate_queue_settings(changes, running))
    current = queue_config_to_dict(running)
    return {
        # None: a post without its version; Save then says so (the page's usual check).
        "version": "" if version is None else version,
        "draft": True,
        **fields_context({**current, **changes}, errors, stored, current),
    }
