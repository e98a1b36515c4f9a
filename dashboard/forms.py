"""Translate the tenant editor's and settings page's form posts to raw config dicts.

The editor names every input by its validation path
(`query_priority.priorities[1].query_attributes[0].regex`), so a
`FieldError` from `scheduler_core.validation` lands on exactly the input it
is about with no mapping table to keep in step. Parsing here never decides
what is valid: it only turns text into the raw shape (numbers where a number
was typed, text otherwise) and the validator judges, so the browser and the
REST API get the same messages. Blank inputs mean "not set".

The number boxes of both pages are text inputs, not `<input type=number>`,
on purpose: a number input holding text it cannot read ("-", "1e", "--5")
posts "", which would read here as a box left blank, and the save would
silently drop the limit. As text, what was typed reaches the validator and
is refused at its box (tests/e2e/test_number_boxes_browser.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler_core.errors import FieldError
from scheduler_core.model import API_TYPES
from scheduler_core.validation import MAX_ATTRIBUTES_PER_PRIORITY, MAX_PRIORITIES

__all__ = [
    "ATTRIBUTE_FIELDS",
    "PAIR_FIELDS",
    "SETTINGS_FIELDS",
    "EditorAction",
    "apply_action",
    "editor_model",
    "errors_by_path",
    "settings_from_post",
    "tenant_config_from_post",
]

PRIORITIES = "query_priority.priorities"
REJECTION = "query_rejection"
REJECTION_ATTRIBUTES = "query_rejection.query_attributes"
# (key, label, help) of the plain text fields of one query attribute.
ATTRIBUTE_FIELDS: tuple[tuple[str, str], ...] = (
    ("regex", "Query regex (RE2, unanchored)"),
    ("user_agent_regex", "User-Agent regex"),
    ("dashboard_uid", "Dashboard UID"),
    ("panel_id", "Panel ID"),
)
# (key, label, (low key, high key)) of the duration pairs of one attribute.
PAIR_FIELDS: tuple[tuple[str, str, tuple[str, str]], ...] = (
    ("time_window", "Time window (before now)", ("start", "end")),
    ("time_range_limit", "Time range limit", ("min", "max")),
    ("query_step_limit", "Query step limit", ("min", "max")),
)
# The placeholders of each pair's two fields: values an operator might use.
PAIR_EXAMPLES: dict[str, tuple[str, str]] = {
    "time_window": ("1h", "0s"),  # from an hour ago to now
    "time_range_limit": ("6h", "7d"),
    "query_step_limit": ("1m", "5m"),
}
SETTINGS_FIELDS: tuple[str, ...] = (
    "layout",
    "component_selection",
    "max_outstanding_requests_per_tenant",
    "querier_forget_delay",
    "priority_aging",
    "query_ingesters_within",
    "query_store_after",
    "max_queue_hierarchy_levels",
    "actor_path_header",
    "stuck_threshold",
    "max_federated_tenants",
)
_NUMERIC_SETTINGS = frozenset(
    {"max_outstanding_requests_per_tenant", "max_queue_hierarchy_levels", "max_federated_tenants"}
)
# Indices of at most six ASCII digits: the form never sends more, and a
# longer one (thousands of digits) is past what int() converts, a 500.
_INDEX_DIGITS = "[0-9]{1,6}"
_INDEX = rf"\[({_INDEX_DIGITS})\]"
_RULE_KEY = re.compile(rf"query_priority\.priorities{_INDEX}\.(.+)")
_ATTR_KEY = re.compile(rf"query_attributes{_INDEX}\.(.+)")
_REJECT_KEY = re.compile(rf"query_rejection\.query_attributes{_INDEX}\.(.+)")
_ACTION_INDEX = re.compile(_INDEX_DIGITS)  # the same bound on an editor action's indices
_INT = re.compile(r"-?[0-9]+")
# Exponents too: a small share saved through the API or the YAML view
# (max_query_capacity: 0.00001) is shown in its box as Python writes it,
# "1e-05", and read back as text it was refused on every later form save.
_NUMBER = re.compile(r"-?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?")


def _number(text: str) -> Any:
    """An int or float when the text is one, else the text (the validator says why)."""
    text = text.strip()
    try:
        if _INT.fullmatch(text):
            return int(text)
        if _NUMBER.fullmatch(text):
            return float(text)
    except ValueError:
        pass  # more digits than int() converts: no limit takes it; left as text
    return text


def _put(target: dict[str, Any], dotted: str, value: Any) -> None:
    head, _, rest = dotted.partition(".")
    if not rest:
        target[head] = value
        return
    inner = target.get(head)
    if not isinstance(inner, dict):
        # A post naming both `time_window` and `time_window.start` (no form
        # of ours does): the structured one is kept, never a crash.
        inner = target[head] = {}
    _put(inner, rest, value)


# The attribute boxes whose text is kept as typed: a regex's spaces are part
# of what it matches (" by " is not "by"), and the YAML view keeps them, so
# trimming them here changed the rule on a save and on a switch of views.
_VERBATIM = frozenset(key for key, _ in ATTRIBUTE_FIELDS)


def _attribute(fields: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if key in _VERBATIM:
            # Only an empty box is unset: a regex of blanks (" ") is a rule the
            # API stores, and dropping it left "no field set" on every save.
            if value:
                _put(out, key, value)
        elif value.strip():
            _put(out, key, value.strip())
    return out


def _rules(post: Mapping[str, str]) -> list[dict[str, Any]]:
    rules: dict[int, dict[str, Any]] = {}
    attrs: dict[int, dict[int, dict[str, str]]] = {}
    for name, value in post.items():
        found = _RULE_KEY.fullmatch(name)
        if found is None:
            continue
        index, rest = int(found.group(1)), found.group(2)
        rule = rules.setdefault(index, {})
        attr = _ATTR_KEY.fullmatch(rest)
        if attr is not None:
            attrs.setdefault(index, {}).setdefault(int(attr.group(1)), {})[attr.group(2)] = value
        elif rest in ("priority", "reserved_queriers") and value.strip():
            rule[rest] = _number(value)
    out = []
    for index in sorted(rules):
        rule = rules[index]
        mine = attrs.get(index, {})
        rule["query_attributes"] = [_attribute(mine[j]) for j in sorted(mine)]
        out.append(rule)
    return out


def _rejection_attributes(post: Mapping[str, str]) -> list[dict[str, Any]]:
    attrs: dict[int, dict[str, str]] = {}
    for name, value in post.items():
        found = _REJECT_KEY.fullmatch(name)
        if found is not None:
            attrs.setdefault(int(found.group(1)), {})[found.group(2)] = value
    return [_attribute(attrs[j]) for j in sorted(attrs)]


def tenant_config_from_post(post: Mapping[str, str]) -> dict[str, Any]:
    """The raw tenant block an editor form describes."""
    config: dict[str, Any] = {}
    for key in (
        "max_queriers_per_tenant",
        "max_outstanding_requests_per_tenant",
        "max_query_capacity",
    ):
        text = post.get(key, "").strip()
        if text:
            config[key] = _number(text)
    default = post.get("query_priority.default_priority", "").strip()
    config["query_priority"] = {
        "enabled": post.get("query_priority.enabled") == "on",
        "default_priority": _number(default) if default else 0,
        "priorities": _rules(post),
    }
    rejection_on = post.get("query_rejection.enabled") == "on"
    rejection = _rejection_attributes(post)
    # Only when set, so saving a tenant without rejection rules keeps its
    # block exactly as Cortex spells it.
    if rejection_on or rejection or post.get("query_rejection.present") == "1":
        config["query_rejection"] = {"enabled": rejection_on, "query_attributes": rejection}
    return config


def settings_from_post(post: Mapping[str, str]) -> dict[str, Any]:
    """The settings the form sent; numbers stay numbers, durations stay text.

    A box the form sent empty is sent on as "", for the validator to refuse
    at that box: every setting has a value, and skipping it answered
    "Nothing to save" and put the running value back, as if the operator
    had not cleared it.
    """
    changes: dict[str, Any] = {}
    for key in SETTINGS_FIELDS:
        if key not in post:
            continue
        text = post[key].strip()
        changes[key] = _number(text) if text and key in _NUMERIC_SETTINGS else text
    return changes


class EditorAction:
    """A structural edit of the draft (add, remove, move) asked by a form button."""

    def __init__(self, raw: str) -> None:
        parts = raw.split(":")
        self.verb = parts[0]
        # Every index or none: skipping a bad one would shift the others
        # onto the wrong rule. (`isdigit` also takes "²", which int() refuses.)
        indices = parts[1:]
        valid = all(_ACTION_INDEX.fullmatch(p) for p in indices)
        self.args = [int(p) for p in indices] if valid else []


def apply_action(config: dict[str, Any], action: EditorAction) -> None:
    """Apply a structural edit to the draft in place; unknown or stale indices do nothing."""
    if action.verb in ("add-reject-attr", "remove-reject-attr"):
        _apply_rejection_action(config, action)
        return
    rules: list[dict[str, Any]] = config.setdefault("query_priority", {}).setdefault(
        "priorities", []
    )
    verb, args = action.verb, action.args
    # No "+" past the limits Save enforces: the draft would only gain an
    # error to remove it again by hand (the page hides those buttons too).
    if verb == "add-rule":
        if _has_room(rules, MAX_PRIORITIES):
            rules.append({"priority": "", "query_attributes": [{}]})
        return
    if not args or args[0] >= len(rules):
        return
    i = args[0]
    attrs = rules[i].setdefault("query_attributes", [])
    if verb == "remove-rule":
        del rules[i]
    elif verb == "add-attr" and _has_room(attrs, MAX_ATTRIBUTES_PER_PRIORITY):
        attrs.append({})
    elif verb == "remove-attr" and len(args) > 1 and args[1] < len(attrs):
        del attrs[args[1]]
    elif verb == "up" and i > 0:
        rules[i - 1], rules[i] = rules[i], rules[i - 1]
    elif verb == "down" and i + 1 < len(rules):
        rules[i + 1], rules[i] = rules[i], rules[i + 1]


def _apply_rejection_action(config: dict[str, Any], action: EditorAction) -> None:
    block = config.setdefault(REJECTION, {"enabled": False, "query_attributes": []})
    attrs: list[dict[str, Any]] = block.setdefault("query_attributes", [])
    if action.verb == "add-reject-attr":
        if _has_room(attrs, MAX_ATTRIBUTES_PER_PRIORITY):
            attrs.append({})
    elif action.args and action.args[0] < len(attrs):
        del attrs[action.args[0]]


def _has_room(items: Any, limit: int) -> bool:
    """Whether a "+" may add to `items` (a draft's list, or whatever a stored
    block holds there): the page shows the button, the action adds, alike."""
    return not isinstance(items, list) or len(items) < limit


def errors_by_path(errors: Sequence[FieldError]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for error in errors:
        out.setdefault(error.path, []).append(error.message)
    return out


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _field(path: str, value: Any, errors: dict[str, list[str]], placed: set[str]) -> dict[str, Any]:
    placed.add(path)
    return {"name": path, "value": _text(value), "errors": errors.get(path, [])}


def _attribute_model(
    path: str, attr: Mapping[str, Any], errors: dict[str, list[str]], placed: set[str]
) -> dict[str, Any]:
    texts = [
        dict(_field(f"{path}.{key}", attr.get(key), errors, placed), label=label)
        for key, label in ATTRIBUTE_FIELDS
    ]
    pairs = []
    for key, label, ends in PAIR_FIELDS:
        raw = attr.get(key) or {}
        raw = raw if isinstance(raw, Mapping) else {}
        pair: dict[str, Any] = {
            "label": label,
            "group": _field(f"{path}.{key}", None, errors, placed),
        }
        for side, end, example in zip(("low", "high"), ends, PAIR_EXAMPLES[key], strict=True):
            field = _field(f"{path}.{key}.{end}", raw.get(end), errors, placed)
            pair[side] = dict(field, label=end, placeholder=f"e.g. {example}")
        pairs.append(pair)
    api_type = _field(f"{path}.api_type", attr.get("api_type"), errors, placed)
    return {
        "path": path,
        "errors": errors.get(path, []),
        "texts": texts,
        "pairs": pairs,
        "api_type": api_type,
    }


def editor_model(config: Mapping[str, Any], errors: Sequence[FieldError]) -> dict[str, Any]:
    """The editor's fields with their values and the errors placed on each.

    `unplaced` lists errors whose path matches no input, so none is lost.
    """
    by_path = errors_by_path(errors)
    placed: set[str] = set()
    qp = config.get("query_priority") or {}
    qp = qp if isinstance(qp, Mapping) else {}
    rules = []
    raw_rules = qp.get("priorities") or []
    for i, rule in enumerate(raw_rules if isinstance(raw_rules, list) else []):
        rule = rule if isinstance(rule, Mapping) else {}
        path = f"{PRIORITIES}[{i}]"
        attrs = rule.get("query_attributes") or []
        attrs_path = f"{path}.query_attributes"
        placed.update({path, attrs_path})
        rules.append(
            {
                "index": i,
                "path": path,
                "errors": by_path.get(path, []) + by_path.get(attrs_path, []),
                "full": not _has_room(attrs, MAX_ATTRIBUTES_PER_PRIORITY),
                "priority": _field(f"{path}.priority", rule.get("priority"), by_path, placed),
                "reserved": _field(
                    f"{path}.reserved_queriers", rule.get("reserved_queriers"), by_path, placed
                ),
                "attributes": [
                    dict(
                        _attribute_model(f"{attrs_path}[{j}]", a, by_path, placed),
                        index=j,
                        remove_action=f"remove-attr:{i}:{j}",
                        remove_label=f"Remove attribute {j + 1} of rule {i + 1}",
                        hits=f"rule-{i}-attr-{j}",
                    )
                    for j, a in enumerate(attrs if isinstance(attrs, list) else [])
                    if isinstance(a, Mapping)
                ],
            }
        )
    fields = {
        key.replace(".", "_"): _field(key, value, by_path, placed)
        for key, value in (
            ("max_queriers_per_tenant", config.get("max_queriers_per_tenant")),
            (
                "max_outstanding_requests_per_tenant",
                config.get("max_outstanding_requests_per_tenant"),
            ),
            ("max_query_capacity", config.get("max_query_capacity")),
            ("query_priority.default_priority", qp.get("default_priority", 0)),
            ("query_priority.enabled", None),
        )
    }
    placed.add(PRIORITIES)
    rejection = _rejection_model(config, by_path, placed)
    return {
        "rejection": rejection,
        "fields": fields,
        "enabled": bool(qp.get("enabled")),
        "rules": rules,
        "rules_full": not _has_room(raw_rules, MAX_PRIORITIES),
        "max_rules": MAX_PRIORITIES,
        "max_attributes": MAX_ATTRIBUTES_PER_PRIORITY,
        "rules_errors": by_path.get(PRIORITIES, []),
        "api_types": API_TYPES,
        "unplaced": [e for e in errors if e.path not in placed],
        "error_count": len(errors),
    }


def _rejection_model(
    config: Mapping[str, Any], by_path: dict[str, list[str]], placed: set[str]
) -> dict[str, Any]:
    """The editor's rejection section: the same attribute widgets as priorities."""
    raw = config.get(REJECTION)
    block = raw if isinstance(raw, Mapping) else {}
    attrs = block.get("query_attributes") or []
    placed.update({REJECTION, REJECTION_ATTRIBUTES, f"{REJECTION}.enabled"})
    return {
        "present": isinstance(raw, Mapping),
        "enabled": bool(block.get("enabled")),
        "full": not _has_room(attrs, MAX_ATTRIBUTES_PER_PRIORITY),
        "errors": by_path.get(REJECTION, [])
        + by_path.get(REJECTION_ATTRIBUTES, [])
        + by_path.get(f"{REJECTION}.enabled", []),
        "attributes": [
            dict(
                _attribute_model(f"{REJECTION_ATTRIBUTES}[{j}]", a, by_path, placed),
                index=j,
                remove_action=f"remove-reject-attr:{j}",
                remove_label=f"Remove rejection attribute {j + 1}",
                hits=f"reject-{j}",
            )
            for j, a in enumerate(attrs if isinstance(attrs, list) else [])
            if isinstance(a, Mapping)
        ],
    }
