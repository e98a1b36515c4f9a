"""A stored tenant block as Cortex reads it: the runtime-config export's form.

The export is what an operator feeds back to Cortex, whose strict loader
refuses what it does not know: a duration given as a number of seconds
(stored here as written) becomes the duration string of the same length,
and with a Cortex version the fields that version lacks are left out.

May import: `scheduler_core`, `api.store.import_plan`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.store.import_plan import block_in_field_order
from scheduler_core.durations import to_milliseconds
from scheduler_core.validation import InvalidDuration, format_duration, parse_duration

__all__ = ["block_for_cortex"]

# The time pairs of a query attribute: Cortex reads each side as a
# `model.Duration`, a string ("1h"; "0" alone needs no unit). A number of
# seconds, accepted here and stored as written, is refused there.
_DURATION_PAIRS = ("time_window", "time_range_limit", "query_step_limit")
# The tenant fields Cortex 1.15 did not read yet, by the Cortex version that
# first does (pkg/util/validation/limits.go); None: none does (Loki's field).
_CORTEX_SINCE: dict[str, tuple[int, int] | None] = {
    "query_priority": (1, 17),
    "query_rejection": (1, 18),
    "max_query_capacity": None,
}
# Query attributes in 1.17 read only `regex` and `time_window`; 1.18 added these.
_ATTRIBUTE_FIELDS_SINCE_1_18 = frozenset(
    {"api_type", "time_range_limit", "query_step_limit", "user_agent_regex"}
    | {"dashboard_uid", "panel_id"}
)


def _cortex_duration(value: Any) -> Any:
    """A number of seconds as the duration string of the milliseconds the
    scheduler reads it as (`to_milliseconds`: 0.0004 is "1ms", never the
    "0s" that would unset the bound in Cortex); anything else as it is."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    try:
        seconds = parse_duration(value)
    except InvalidDuration:
        return value
    # A negative one is a stored value the rules now refuse: shown as it is.
    return format_duration(to_milliseconds(seconds)) if seconds >= 0 else value


def _unset(value: Any) -> bool:
    """An attribute field that checks nothing: null, "", or a pair of zeros."""
    if isinstance(value, Mapping):
        return all(_unset(side) for side in value.values())
    if value is None or value == "":
        return True
    try:
        return parse_duration(value) == 0
    except InvalidDuration:
        return False


def _late_fields(attrs: Any, path: str) -> tuple[Any, list[str]]:
    """A 1.17 rule's attributes without the fields 1.18 added, and those set there."""
    if not isinstance(attrs, list):
        return attrs, []
    kept: list[Any] = []
    unreadable: list[str] = []
    for index, attr in enumerate(attrs):
        if isinstance(attr, Mapping):
            late = [key for key in attr if key in _ATTRIBUTE_FIELDS_SINCE_1_18]
            unreadable += [f"{path}[{index}].{key}" for key in late if not _unset(attr[key])]
            attr = {key: value for key, value in attr.items() if key not in late}
        kept.append(attr)
    return kept, unreadable


def _for_version(
    block: Mapping[str, Any], version: tuple[int, int]
) -> tuple[dict[str, Any], list[str]]:
    out = {
        key: value
        for key, value in block.items()
        if key not in _CORTEX_SINCE or ((since := _CORTEX_SINCE[key]) and version >= since)
    }
    priority = out.get("query_priority")
    rules = priority.get("priorities") if isinstance(priority, Mapping) else None
    if version >= (1, 18) or not isinstance(priority, Mapping) or not isinstance(rules, list):
        return out, []
    kept: list[Any] = []
    unreadable: list[str] = []
    for index, rule in enumerate(rules):
        if isinstance(rule, Mapping) and "query_attributes" in rule:
            path = f"query_priority.priorities[{index}].query_attributes"
            attrs, late = _late_fields(rule["query_attributes"], path)
            rule = {**rule, "query_attributes": attrs}
            unreadable += late
        kept.append(rule)
    return {**out, "query_priority": {**priority, "priorities": kept}}, unreadable


def block_for_cortex(
    block: Mapping[str, Any], version: tuple[int, int] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """A stored block as the runtime-config export writes it, in field order.

    Durations given as numbers of seconds become strings (3600 -> "1h").
    With a Cortex `version` (major, minor), fields it does not know are left
    out (`query_priority` before 1.17, `query_rejection` before 1.18,
    `max_query_capacity` always); a rule's attribute that sets a field the
    version cannot read is not rewritten, since dropping the field would
    widen what the rule matches: its path is returned instead.
    """
    if not isinstance(block, Mapping):
        # A row an old release or a hand edit left holding no mapping runs
        # as the defaults; it is exported as stored, as a block that no
        # longer validates is, so the file shows it rather than hiding it.
        return block, []
    out, unreadable = (dict(block), []) if version is None else _for_version(block, version)
    return block_in_field_order(_durations_as_text(out)), unreadable


def _durations_as_text(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {
            key: (
                {side: _cortex_duration(d) for side, d in child.items()}
                if key in _DURATION_PAIRS and isinstance(child, Mapping)
                else _durations_as_text(child)
            )
            for key, child in value.items()
        }
    if isinstance(value, list):
        return [_durations_as_text(child) for child in value]
    return value
