"""Formatting shared by the server-rendered inspector and its script.

`static/dashboard/format.js` spells every one of these the same way, so a
node's accessible name ("tenant-a: 12 queued") is identical before and after
the first live update, for people, screen readers and tests alike.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from datetime import UTC, datetime
from typing import Any

from django import template
from django.utils.html import conditional_escape, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from scheduler_core.durations import format_duration

__all__ = [
    "cancel_filter_value",
    "config_value",
    "field_label",
    "format_wait",
    "frontend_label",
    "frontends_count",
    "frontends_missing",
    "iso",
    "node_label",
    "priority_class",
    "register",
    "shown",
    "transport_label",
    "visible",
]

register = template.Library()

_STATES = {
    "busy": "busy",
    "idle": "idle",
    "reserved-idle": "reserved · idle",
    "shutting-down": "shutting down",
    "disconnected": "disconnected (kept)",
}


# -- clients' text: format.js's `visible`, `iso` and `visibleHtml`, for the first paint --
# A bidi control (U+202E, the U+2066..U+2069 isolates, ...) reorders the text
# around it and zero-width characters hide text (Trojan Source): each is
# written out as its code point, and right-to-left strings are isolated.
# Format characters (Cf), controls but tab, newline and CR, and the invisible
# fillers format.js lists.
_FILLERS = frozenset("\u034f\u115f\u1160\u2028\u2029\u3164\uffa0")
_RTL = re.compile(
    "[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefe\U00010800-\U00010fff\U0001e800-\U0001efff]"
)


def _hidden(char: str) -> bool:
    kind = unicodedata.category(char)
    return kind == "Cf" or (kind == "Cc" and char not in "\t\n\r") or char in _FILLERS


def _pieces(text: str) -> list[tuple[str, str]]:
    """`text` cut at each hidden character: (plain, "U+XXXX") pairs, the last code ""."""
    pieces, start = [], 0
    for at, char in enumerate(text):
        if _hidden(char):
            pieces.append((text[start:at], f"U+{ord(char):04X}"))
            start = at + 1
    pieces.append((text[start:], ""))
    return pieces


@register.filter
def visible(text: Any) -> str:
    """`text` with each hidden character written out as "⟨U+XXXX⟩" (as format.js)."""
    text = str(text)
    if text.isascii() and text.isprintable():
        return text  # nothing hidden: the common case, without the walk
    return "".join(plain + (f"⟨{code}⟩" if code else "") for plain, code in _pieces(text))


@register.filter
def iso(text: Any) -> str:
    """`visible`, wrapped in a first-strong isolate when it holds right-to-left letters."""
    shown_text = visible(text)
    return f"\u2068{shown_text}\u2069" if _RTL.search(shown_text) else shown_text


_MARK = (
    '<span class="hidden-char" title="an invisible character in the text, written out so it'
    ' cannot reorder or hide what you read">⟨{}⟩</span>'
)


@register.filter
def shown(text: Any) -> SafeString:
    """Markup for `text`: escaped, each hidden character a marked escape (format.js's
    `appendVisible`); the element around it isolates it (`dir` or <bdi>)."""
    text = str(text)
    if text.isascii() and text.isprintable():
        return conditional_escape(text)
    html = "".join(
        conditional_escape(plain) + (_MARK.format(code) if code else "")
        for plain, code in _pieces(text)
    )
    return mark_safe(html)  # noqa: S308 - every piece escaped above


# JavaScript's Number.MAX_SAFE_INTEGER: format.js counts whole microseconds exactly up to it.
_SAFE_MICROSECONDS = 2**53 - 1


def _wait_resolution(seconds: float) -> float:
    """format.js's `waitResolution`: tenths under 10 s, seconds under an hour, then minutes."""
    return 0.1 if seconds < 10 else 1.0 if seconds < 3600 else 60.0


# format.js's units below a minute, largest first: (name, microseconds).
_SMALL_UNITS = (("s", 1_000_000), ("ms", 1_000), ("µs", 1))


def format_wait(seconds: float | str | None) -> str:
    """A live wait as format.js's `formatWait` spells it ("9.9s", "1m15s", "2d10m").

    Rounded to its resolution half up with the same float operations in the
    same order as the script (Python's round() halves to even). Below a
    minute, one unit with its decimals (`spellDuration`); from a minute up
    the wait is whole seconds, spelled by `format_duration`, the explain
    box's and the rules' notation.
    """
    if not isinstance(seconds, int | float):
        return "–"
    seconds = max(0.0, seconds)  # as formatWait: a moment off between clocks reads 0
    step = max(1, round(_wait_resolution(seconds) * 1e6))
    scaled = seconds * 1e6 / step + 0.5
    if not math.isfinite(scaled):
        return "–"
    microseconds = math.floor(scaled) * step
    if microseconds > _SAFE_MICROSECONDS:  # past 285 years: as the script says
        return "–"
    if 0 < microseconds < 60_000_000:
        unit, size = next((u, n) for u, n in _SMALL_UNITS if n <= microseconds)
        decimals = 0
        while size > step * 10**decimals:
            decimals += 1
        return f"{microseconds / size:.{decimals}f}{unit}"
    return format_duration(microseconds / 1e6)


def priority_class(priority: int) -> str:
    return f"pc-{max(0, min(int(priority), 5))}"


@register.simple_tag
def wait(seconds: float | str | None) -> str:
    return format_wait(seconds)


@register.simple_tag
def node_label(node: dict[str, Any]) -> str:
    """As format.js's `nodeLabel`: the row's name, count and priority mix."""
    pairs = node.get("by_priority") or []
    queued = f"{node['length']} queued" + (f" ({_priority_text(pairs)})" if pairs else "")
    if node["kind"] == "others":
        return f"others ({node['count']} tenants): {queued}"
    if node["kind"] == "actor-others":
        return f"others ({node['count']} actors): {queued}"
    if node["kind"] == "actor":
        return f"actor {iso(node['name'])}: {queued}"
    return f"{iso(node['name'])}: {queued}"


def _priority_text(pairs: list[tuple[int, int]]) -> str:
    return " · ".join(f"p{p} {c}" for p, c in pairs)


@register.simple_tag
def priority_bar(node: dict[str, Any]) -> str:
    total = max(1, int(node["length"]))
    pairs = node["by_priority"]
    bar = format_html_join(
        "",
        '<i class="{}" style="width:{}%"></i>',
        ((priority_class(p), f"{100 * c / total:.1f}") for p, c in pairs),
    )
    text = _priority_text(pairs)
    return format_html(
        '<span class="bar" aria-hidden="true">{}</span><span class="prios">{}</span>', bar, text
    )


@register.simple_tag
def querier_state(querier: dict[str, Any]) -> str:
    return _STATES.get(querier["state"], querier["state"])


@register.simple_tag
def worker_text(worker: dict[str, Any]) -> str:
    took = format_wait(worker["for"])
    if worker["state"] == "busy":
        what = f"{iso(worker['tenant'])} / {worker['component']} / p{worker['priority']}"
        return f"#{worker['id']} busy · {what} · {took}"
    if worker["state"] == "waiting":
        return f"#{worker['id']} waiting for work · {took}"
    return f"#{worker['id']} idle · {took}"


@register.simple_tag
def transport_label(transport: str) -> str:
    return "gRPC" if transport == "grpc" else transport


@register.simple_tag
def frontend_label(frontend: dict[str, Any]) -> str:
    """The row's accessible name: what it is, where from, and how much it waits on."""
    transport = transport_label(frontend["transport"])
    replica = frontend.get("replica")
    on = f" on replica {iso(replica)}" if replica else ""
    address = iso(frontend["address"])
    return f"{transport} frontend {address}{on}: {frontend['outstanding']} outstanding"


@register.simple_tag
def frontends_count(panel: dict[str, Any]) -> str:
    """How many frontends the rows cover: the total, or which replicas' when not all."""
    where = "total"
    if panel["local_only"]:
        every = len(panel.get("replicas") or ())
        listed = every - len(panel.get("missing") or ())
        where = f"on {listed} of {every} replicas" if listed > 1 else "on this replica"
    return f"{panel['total']} {where} · {panel['outstanding']} outstanding"


@register.simple_tag
def frontends_missing(panel: dict[str, Any]) -> str:
    """Which live replicas' frontends the panel lacks (they publish none), or ""."""
    missing = panel.get("missing") or ()
    if not missing:
        return ""
    if len(missing) == 1:
        return (
            f"Not listed: the frontends of replica {iso(missing[0])}, which does not publish them."
        )
    names = ", ".join(map(iso, missing))
    return f"Not listed: the frontends of replicas {names}, which do not publish them."


@register.filter
def other_layout(layout: str) -> str:
    return "component-first" if layout == "tenant-first" else "tenant-first"


# Text that, shown bare, would read as something else: another type, "absent",
# or without the spaces at its ends (a regex's spaces are part of it).
_AMBIGUOUS_TEXT = re.compile(r"|\s.*|.*\s|true|false|null|—|[-+]?[0-9.][0-9.eE+-]*", re.DOTALL)


@register.filter
def config_value(value: Any) -> str:
    """A revision value as the config spells it: JSON for blocks, "—" when absent.

    Text is shown bare, as YAML writes it, unless it would then read as
    something else (`_AMBIGUOUS_TEXT`): then JSON-quoted. Non-ASCII stays
    itself (`ñ`, not `\\u00f1`).
    """
    if value is None:
        return "—"
    if isinstance(value, str) and not _AMBIGUOUS_TEXT.fullmatch(value):
        return value
    return json.dumps(value, separators=(", ", ": "), ensure_ascii=False)


@register.filter
def cancel_filter_value(value: Any, key: str) -> str:
    """A recorded cancel's filter value; an instant in unix seconds also as its UTC time.

    `enqueued_before` is kept as it was sent, and the inspector sends unix
    seconds: "1796597163.290644" alone tells an operator nothing.
    """
    text = str(value)
    if key != "enqueued_before":
        return text
    try:
        seconds = float(text)
        when = datetime.fromtimestamp(seconds, UTC)
    except (ValueError, OverflowError, OSError):
        return text  # RFC 3339 text already reads as a time
    return f"{text} ({when:%Y-%m-%d %H:%M:%S}.{when.microsecond // 1000:03d} UTC)"


@register.filter
def json_attr(value: Any) -> str:
    """Plain data as JSON for a `data-` attribute (the template escapes it)."""
    return json.dumps(value, separators=(",", ":"))


# A rule or attribute index with the dots around it; other dots stay, since a
# tenant ID may hold one ("team.a" in a whole-config path).
_INDEXED = re.compile(r"\.?(?:query_priority\.)?(priorities|query_attributes)\[(\d+)\]\.?")
_INDEX_NAMES = {"priorities": "rule", "query_attributes": "attribute"}


@register.filter
def field_label(path: str) -> str:
    """A config path as the editor numbers it: "rule 1 › attribute 2 › regex".

    The stored path counts rules and attributes from 0 and reads
    `query_priority.priorities[0].query_attributes[1].regex`; the editor
    shows "Rule 1" and "Attribute 2". Key names stay as in the YAML.
    Pages show the stored path as the label's title.
    """
    if not isinstance(path, str):
        return path
    named = _INDEXED.sub(lambda m: f" › {_INDEX_NAMES[m[1]]} {int(m[2]) + 1} › ", path)
    return " › ".join(part.strip() for part in named.split(" › ") if part.strip())
