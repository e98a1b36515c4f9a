"""The tenant editor's draft, from whichever of its two views the page posted.

The form view posts one input per field (`dashboard.forms`); the YAML view
posts the block's text as `yaml` with `view=yaml`, read by
`api.store.config_yaml.parse_tenant_block`. Either way the draft is the
same raw tenant body, judged by the same validator, so switching views
carries unsaved edits across and an error's field path puts it on its
input in the form and on its line in the YAML. Saving is two steps: the
first shows the diff and a token of exactly what it showed; only a post
carrying that token for the same draft and version saves.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from api.store.config_yaml import (
    BlockParse,
    LocatedError,
    LocatedName,
    locate,
    parse_tenant_block,
    tenant_block_yaml,
)
from dashboard.forms import tenant_config_from_post
from scheduler_core.errors import FieldError

__all__ = [
    "FORM",
    "VIEWS",
    "YAML",
    "Draft",
    "draft_from_post",
    "review_token",
    "spelled_as_saved",
    "yaml_errors",
    "yaml_for",
]

FORM, YAML = "form", "yaml"
VIEWS = (FORM, YAML)
# What a field left out means to Cortex: a draft adding one of these adds nothing.
_UNSET_VALUES: tuple[Any, ...] = (None, False, 0, "", [], {})


def spelled_as_saved(
    draft: dict[str, Any], saved: Mapping[str, Any] | None, *, form: bool = False
) -> dict[str, Any]:
    """The draft without the fields it adds at their unset value (0, false, [], ...).

    The form posts every field it shows, so Save on a tenant saved without
    `query_priority` proposed adding a disabled, empty block, and one with
    `query_rejection: {enabled: false}` proposed `query_attributes: []`:
    revisions that changed nothing the scheduler does. A field the saved
    block has is kept at any value, so setting it back to 0 is still a change.

    `form`: the draft came from the form, which posts no empty box, so a
    field saved at its unset value (an attribute's `regex: ''` saved through
    the API) is put back rather than proposed for removal. Lists are walked
    only when the draft keeps the saved list's length: a rule's position is
    what identifies it, and after a rule is added or removed, positions no
    longer pair a draft rule with the one it was saved as.
    """
    kept: dict[str, Any] = {}
    had_block = saved if isinstance(saved, Mapping) else {}
    for key, value in draft.items():
        had = had_block.get(key)
        value = _walked(value, had, form)
        if key in had_block or value not in _UNSET_VALUES:
            kept[key] = value
    if form:
        for key, had in had_block.items():
            if key not in kept and had in _UNSET_VALUES:
                kept[key] = had
    return kept


def _walked(value: Any, had: Any, form: bool) -> Any:
    if isinstance(value, dict):
        return spelled_as_saved(value, had if isinstance(had, Mapping) else None, form=form)
    if form and isinstance(value, list) and isinstance(had, list) and len(had) == len(value):
        return [
            spelled_as_saved(item, was, form=True)
            if isinstance(item, dict) and isinstance(was, Mapping)
            else item
            for item, was in zip(value, had, strict=True)
        ]
    return value


@dataclass(frozen=True, slots=True)
class Draft:
    """The posted draft. `config` is None only when the YAML text is no tenant block."""

    view: str
    config: dict[str, Any] | None
    text: str | None = None
    parsed: BlockParse | None = None
    ignored: list[LocatedName] = field(default_factory=list)

    @property
    def pasted_tenant(self) -> str | None:
        return self.parsed.pasted_tenant if self.parsed else None

    @property
    def syntax(self) -> LocatedError | None:
        return self.parsed.syntax if self.parsed else None


def draft_from_post(post: Mapping[str, str]) -> Draft:
    """The draft of whichever view posted (`view`; the form when absent)."""
    if post.get("view") != YAML:
        return Draft(FORM, tenant_config_from_post(post))
    text = post.get("yaml", "")
    parsed = parse_tenant_block(text)
    return Draft(YAML, parsed.config, text, parsed, list(parsed.ignored))


def yaml_for(tenant_id: str | None, config: Mapping[str, Any]) -> str:
    """The YAML view's text of a draft: the block under its tenant key line."""
    return tenant_block_yaml(tenant_id or None, config)


def yaml_errors(text: str, errors: Sequence[FieldError]) -> list[LocatedError]:
    """Validator errors placed on their lines of the text the YAML view shows."""
    return locate(list(errors), parse_tenant_block(text).lines)


def review_token(tenant_id: str, version: int | None, config: Mapping[str, Any]) -> str:
    """Names exactly one reviewed draft of one tenant at one version."""
    blob = json.dumps([tenant_id, version, config], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]
