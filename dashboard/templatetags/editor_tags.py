"""The tenant editor's repeated pieces, a box and an attribute, made in Python.

The largest tenant the validator allows (100 rules of 50 attributes) has
some 55,000 boxes. Made by one `{% include %}` per box and per attribute,
its editor page took 14 s to render, nearly all of it in Django's template
engine resolving 1.2 million variables; `format_html` per piece still took
5 s. Here each piece is an f-string whose every value passes `_e`, the
stdlib escape Django's own `escape` wraps (the same five characters).

Both tags take the models `dashboard.forms.editor_model` builds: a box is
`{"name", "value", "errors"}`, an attribute its texts, API type and pairs.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from django import template
from django.utils.safestring import SafeString, mark_safe

__all__ = ["attribute", "field", "register"]

register = template.Library()


def _e(value: Any) -> str:
    return html.escape(str(value))


def _error(element_id: str, errors: Sequence[str]) -> str:
    """A box's or group's error line, which its boxes' aria-describedby names."""
    if not errors:
        return ""
    return f'<p class="field-error" id="{_e(element_id)}">{_e("; ".join(errors))}</p>'


def _box(
    f: Mapping[str, Any],
    label: str,
    readonly: Any,
    mono: bool = False,
    placeholder: str = "",
    group: Mapping[str, Any] | None = None,
) -> str:
    name, errors = _e(f["name"]), f["errors"]
    described = [f"{name}-err"] if errors else []
    if group is not None and group["errors"]:
        described.append(f"{_e(group['name'])}-err")
    return (
        f'<div class="field{" has-error" if errors else ""}">'
        f'<label for="{name}">{_e(label)}</label>'
        f'<input id="{name}" name="{name}" value="{_e(f["value"])}"'
        + (f' aria-invalid="true" aria-describedby="{" ".join(described)}"' if described else "")
        + (" readonly" if readonly else "")
        + (' class="mono"' if mono else "")
        + (f' placeholder="{_e(placeholder)}"' if placeholder else "")
        + f">{_error(f['name'] + '-err', errors)}</div>"
    )


@register.simple_tag
def field(
    f: Mapping[str, Any],
    label: str,
    readonly: Any = False,
    mono: bool = False,
    placeholder: str = "",
    group: Mapping[str, Any] | None = None,
) -> SafeString:
    """One labelled box. `group`: the field of the group it is in (a duration
    pair's), whose error describes it too and marks it invalid."""
    return mark_safe(_box(f, label, readonly, mono, placeholder, group))


def _api_type(box: Mapping[str, Any], api_types: Sequence[str], is_editor: bool) -> str:
    name, value, errors = _e(box["name"]), box["value"], box["errors"]
    options = "".join(
        f'<option value="{_e(t)}"{" selected" if t == value else ""}>{_e(t)}</option>'
        for t in api_types
    )
    return (
        f'<div class="field{" has-error" if errors else ""}">'
        f'<label for="{name}">API type</label><select id="{name}" name="{name}"'
        + (f' aria-invalid="true" aria-describedby="{name}-err"' if errors else "")
        + ("" if is_editor else " disabled")
        + f'><option value="">any</option>{options}</select>'
        # A disabled select posts nothing: a viewer's form still carries the value.
        + ("" if is_editor else f'<input type="hidden" name="{name}" value="{_e(value)}">')
        + f"{_error(box['name'] + '-err', errors)}</div>"
    )


def _pair(pair: Mapping[str, Any], readonly: Any) -> str:
    """A duration pair: a group whose boxes' own labels are only "start", "min"..."""
    group = pair["group"]
    name = _e(group["name"])
    boxes = "".join(
        _box(box, box["label"], readonly, placeholder=box["placeholder"], group=group)
        for box in (pair["low"], pair["high"])
    )
    return (
        f'<div class="pair{" has-error" if group["errors"] else ""}" role="group"'
        f' aria-labelledby="{name}-label"><span class="pair-label" id="{name}-label">'
        f'{_e(pair["label"])}</span><div class="pair-fields">{boxes}</div>'
        f"{_error(group['name'] + '-err', group['errors'])}</div>"
    )


@register.simple_tag(takes_context=True)
def attribute(context: template.Context, attr: Mapping[str, Any]) -> SafeString:
    """One query attribute's boxes, the same for priority rules and query rejection.

    Named by its number alone (not its remove button and hit counts, also in
    the legend); its rule's group names the rule. Its errors, its pairs' and
    its API type's describe their boxes.
    """
    is_editor = bool(context.get("is_editor"))
    readonly = not is_editor
    path, errors, texts = _e(attr["path"]), attr["errors"], attr["texts"]
    legend = f'<span id="{path}-title">Attribute {attr["index"] + 1}</span>'
    if is_editor:
        legend += (
            f' <button type="submit" name="action" value="{_e(attr["remove_action"])}"'
            f' class="link small" aria-label="{_e(attr["remove_label"])}">remove</button>'
        )
    if context.get("show_hits"):
        legend += f' <span class="hits" data-hits="{_e(attr["hits"])}"></span>'
    lines = "".join(f'<p class="field-error">{_e(e)}</p>' for e in errors)
    return mark_safe(
        f'<fieldset class="attribute{" has-error" if errors else ""}"'
        f' aria-labelledby="{path}-title"'
        + (f' aria-describedby="{path}-err"' if errors else "")
        + f"><legend>{legend}</legend>"
        + (f'<div id="{path}-err">{lines}</div>' if errors else "")
        + '<div class="grid3">'
        + _box(texts[0], texts[0]["label"], readonly, mono=True)
        + _api_type(attr["api_type"], context["api_types"], is_editor)
        + _box(texts[1], texts[1]["label"], readonly, mono=True)
        + _box(texts[2], texts[2]["label"], readonly)
        + _box(texts[3], texts[3]["label"], readonly)
        + '</div><div class="grid3 pairs">'
        + "".join(_pair(p, readonly) for p in attr["pairs"])
        + "</div></fieldset>"
    )
