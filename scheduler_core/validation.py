"""One validator for tenant limits, whatever their source.

The browser form, the REST API and Cortex runtime-config YAML all hand us the
same raw shape (Cortex's per-tenant overrides), so a single parse pass both
collects every `FieldError` and builds the model values: validation and
construction can never disagree. Paths are dotted and indexed
(`query_priority.priorities[1].query_attributes[0].regex`) so a UI can put
each message next to its field.

Scheduler settings are read the same way in queue_settings.py; their public
names, and the duration and regex helpers, are re-exported here so callers
import every config validator from this one module.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from scheduler_core import fields as f
from scheduler_core.durations import InvalidDuration, format_duration, parse_duration
from scheduler_core.errors import ConfigInvalid, FieldError
from scheduler_core.model import (
    API_TYPES,
    PriorityDef,
    QueryAttribute,
    QueryPriority,
    QueryRejection,
    TenantLimits,
    TimeRange,
)
from scheduler_core.queue_settings import (
    queue_config_from_dict,
    queue_config_to_dict,
    validate_queue_settings,
)
from scheduler_core.regex import compile_regex, regex_error

__all__ = [
    "MAX_ATTRIBUTES_PER_PRIORITY",
    "MAX_PRIORITIES",
    "MAX_REGEX_LENGTH",
    "TENANT_KEYS",
    "TEXT_FIELDS",
    "InvalidDuration",
    "compile_regex",
    "format_duration",
    "parse_duration",
    "queue_config_from_dict",
    "queue_config_to_dict",
    "tenant_limits_from_dict",
    "tenant_limits_to_dict",
    "validate_queue_settings",
    "validate_tenant_config",
    "validate_tenant_patch",
]

# Bounds keep one tenant's rules cheap to match on every enqueue.
MAX_PRIORITIES = 100
MAX_ATTRIBUTES_PER_PRIORITY = 50
MAX_REGEX_LENGTH = 1000
# A header value matched exactly (`dashboard_uid`, `panel_id`): Grafana's are
# tens of characters, and proxies refuse a whole header block past 8 KB.
MAX_HEADER_VALUE_LENGTH = 4096
# What an HTTP field value cannot hold (RFC 9110 5.5): controls but tab, and DEL.
_NOT_IN_HEADER = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")

# Every top-level key of a tenant block (Cortex override names), set or not.
TENANT_KEYS = (
    "max_queriers_per_tenant",
    "max_outstanding_requests_per_tenant",
    "query_priority",
    "max_query_capacity",
    "query_rejection",
)
# The keys of the mappings inside a block (lists are replaced whole).
_QUERY_PRIORITY_KEYS = ("enabled", "default_priority", "priorities")
_QUERY_REJECTION_KEYS = ("enabled", "query_attributes")


def _text_within(value: object, path: str, errs: f.Collector, limit: int) -> str | None:
    """A text field of at most `limit` characters."""
    text = f.text(value, path, errs)
    if text is not None and len(text) > limit:
        errs.add(path, f"is {len(text)} characters long, at most {limit}")
        return None
    return text


def _regex(value: object, path: str, errs: f.Collector) -> str | None:
    pattern = _text_within(value, path, errs, MAX_REGEX_LENGTH)
    if pattern is None:
        return None
    problem = regex_error(pattern)
    if problem is not None:
        errs.add(path, problem)
        return None
    return pattern


def _pair(value: object, path: str, errs: f.Collector, keys: tuple[str, str]) -> TimeRange | None:
    """A pair of optional durations; zero on a side means that side is unset."""
    raw = f.mapping(value, path, errs)
    if raw is None:
        return None
    raw = f.known(raw, keys, path, errs)
    sides = [
        f.duration(raw[key], f.join(path, key), errs) if raw.get(key) is not None else None
        for key in keys
    ]
    low, high = (side or None for side in sides)
    return None if low is None and high is None else TimeRange(low, high)


def _window(value: object, path: str, errs: f.Collector) -> TimeRange | None:
    window = _pair(value, path, errs, ("start", "end"))
    if window and window.min and window.max and window.min <= window.max:
        start, end = format_duration(window.min), format_duration(window.max)
        errs.add(path, f"start ({start}) must be greater than end ({end}): both are before now")
    return window


def _limit(value: object, path: str, errs: f.Collector) -> TimeRange | None:
    limit = _pair(value, path, errs, ("min", "max"))
    if limit and limit.min and limit.max and limit.min > limit.max:
        low, high = format_duration(limit.min), format_duration(limit.max)
        errs.add(path, f"min ({low}) must not exceed max ({high})")
    return limit


# Query attribute fields Cortex declares as strings: Go's YAML decoder reads
# any scalar there as its text (`panel_id: 0123` is "0123", not 83), so a
# loader of Cortex files must too (`api.store.yaml_keys`).
TEXT_FIELDS = frozenset({"regex", "user_agent_regex", "dashboard_uid", "panel_id", "api_type"})


def _header_value(value: object, path: str, errs: f.Collector) -> str | None:
    """Text matched exactly against a request header: one no header can carry
    could never match, so it is refused rather than kept as a dead rule."""
    text = _text_within(value, path, errs, MAX_HEADER_VALUE_LENGTH)
    if text is None:
        return None
    if (bad := _NOT_IN_HEADER.search(text)) is not None:
        errs.add(
            path,
            f"holds the control character U+{ord(bad.group()):04X}, which no HTTP header "
            "can carry, so it could never match",
        )
        return None
    return text


def _panel_id(value: object, path: str, errs: f.Collector) -> str | None:
    # YAML turns an unquoted `panel_id: 4` into an int; panel ids are numeric.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return _header_value(value, path, errs)


def _api_type(value: object, path: str, errs: f.Collector) -> str | None:
    api_type = f.text(value, path, errs)
    if api_type is not None and api_type not in API_TYPES:
        errs.add(path, f"unknown api_type {api_type!r}; allowed: {', '.join(API_TYPES)}")
        return None
    return api_type


_Parser = Callable[[object, str, f.Collector], Any]
_ATTRIBUTE_FIELDS: dict[str, _Parser] = {
    "regex": _regex,
    "time_window": _window,
    "api_type": _api_type,
    "time_range_limit": _limit,
    "query_step_limit": _limit,
    "user_agent_regex": _regex,
    "dashboard_uid": _header_value,
    "panel_id": _panel_id,
}


def _attribute(value: object, path: str, errs: f.Collector) -> QueryAttribute | None:
    raw = f.mapping(value, path, errs)
    if raw is None:
        return None
    before = len(errs.errors)
    raw = f.known(raw, tuple(_ATTRIBUTE_FIELDS), path, errs)
    fields = {
        key: parse(raw[key], f.join(path, key), errs)
        for key, parse in _ATTRIBUTE_FIELDS.items()
        if raw.get(key) is not None
    }
    attr = QueryAttribute(**fields)
    if attr == QueryAttribute() and len(errs.errors) == before:
        errs.add(path, "no field set: an attribute with no field matches nothing")
    return attr


def _priority(value: object, path: str, errs: f.Collector) -> PriorityDef | None:
    raw = f.mapping(value, path, errs)
    if raw is None:
        return None
    raw = f.known(raw, ("priority", "reserved_queriers", "query_attributes"), path, errs)
    if "priority" not in raw:
        errs.add(f.join(path, "priority"), "required")
    level = (
        f.integer(raw.get("priority"), f.join(path, "priority"), errs)
        if "priority" in raw
        else None
    )
    reserved_raw = raw.get("reserved_queriers")
    reserved = (
        0.0
        if reserved_raw is None
        else f.number(reserved_raw, f.join(path, "reserved_queriers"), errs)
    )
    attrs_path = f.join(path, "query_attributes")
    raw_attrs = f.sequence(raw.get("query_attributes"), attrs_path, errs)
    if raw_attrs is not None and not raw_attrs:
        errs.add(attrs_path, "must not be empty: a priority with no attributes matches nothing")
    if raw_attrs is not None and len(raw_attrs) > MAX_ATTRIBUTES_PER_PRIORITY:
        errs.add(
            attrs_path, f"at most {MAX_ATTRIBUTES_PER_PRIORITY} attributes, got {len(raw_attrs)}"
        )
    attrs = [_attribute(a, f"{attrs_path}[{i}]", errs) for i, a in enumerate(raw_attrs or ())]
    if level is None or reserved is None:
        return None
    return PriorityDef(level, reserved, [a for a in attrs if a is not None])


def _query_priority(value: object, path: str, errs: f.Collector) -> QueryPriority:
    raw = f.mapping(value, path, errs)
    if raw is None:
        return QueryPriority()
    raw = f.known(raw, _QUERY_PRIORITY_KEYS, path, errs)
    enabled = raw.get("enabled", False)
    if not isinstance(enabled, bool):
        errs.add(f.join(path, "enabled"), f"must be true or false, got {f.shown(enabled)}")
    default = f.integer(raw.get("default_priority", 0), f.join(path, "default_priority"), errs)
    list_path = f.join(path, "priorities")
    raw_list = f.sequence(raw.get("priorities"), list_path, errs) or ()
    if len(raw_list) > MAX_PRIORITIES:
        errs.add(list_path, f"at most {MAX_PRIORITIES} priorities, got {len(raw_list)}")
    defs: list[PriorityDef] = []
    seen: dict[int, int] = {}
    for i, item in enumerate(raw_list):
        pdef = _priority(item, f"{list_path}[{i}]", errs)
        if pdef is None:
            continue
        if pdef.priority in seen:
            errs.add(
                f"{list_path}[{i}].priority",
                f"duplicate priority {pdef.priority} (first at priorities[{seen[pdef.priority]}])",
            )
        seen.setdefault(pdef.priority, i)
        defs.append(pdef)
    return QueryPriority(enabled is True, default or 0, defs)


def _tenant(raw_value: object, errs: f.Collector) -> TenantLimits:
    raw = f.mapping(raw_value, "", errs)
    if raw is None:
        return TenantLimits()
    # A null is the field unset, on every field and at every depth (`known`),
    # as Cortex's loader reads it: some fields refused null, others took it.
    raw = f.known(raw, TENANT_KEYS, "", errs)
    max_queriers = f.integer(
        raw.get("max_queriers_per_tenant", 0), "max_queriers_per_tenant", errs, 0
    )
    outstanding_raw = raw.get("max_outstanding_requests_per_tenant")
    outstanding = (
        None
        if outstanding_raw is None
        else f.integer(outstanding_raw, "max_outstanding_requests_per_tenant", errs, 1)
    )
    qp = _query_priority(raw.get("query_priority"), "query_priority", errs)
    # Loki's limit: a share of the queriers, so a fraction from 0 (no cap) to 1.
    capacity = f.number(raw.get("max_query_capacity", 0), "max_query_capacity", errs, 1.0)
    qr = _query_rejection(raw.get("query_rejection"), "query_rejection", errs)
    limits = TenantLimits(max_queriers or 0, outstanding, qp, query_rejection=qr)
    return replace(limits, max_query_capacity=float(capacity or 0.0)) if capacity else limits


def _query_rejection(value: object, path: str, errs: f.Collector) -> QueryRejection:
    """Cortex's `query_rejection`: `enabled` and attributes of the priority kind."""
    raw = f.mapping(value, path, errs)
    if raw is None:
        return QueryRejection()
    raw = f.known(raw, _QUERY_REJECTION_KEYS, path, errs)
    enabled = raw.get("enabled", False)
    if not isinstance(enabled, bool):
        errs.add(f.join(path, "enabled"), f"must be true or false, got {f.shown(enabled)}")
    attrs_path = f.join(path, "query_attributes")
    raw_attrs = f.sequence(raw.get("query_attributes"), attrs_path, errs) or ()
    if len(raw_attrs) > MAX_ATTRIBUTES_PER_PRIORITY:
        errs.add(
            attrs_path, f"at most {MAX_ATTRIBUTES_PER_PRIORITY} attributes, got {len(raw_attrs)}"
        )
    attrs = [_attribute(a, f"{attrs_path}[{i}]", errs) for i, a in enumerate(raw_attrs)]
    return QueryRejection(enabled is True, [a for a in attrs if a is not None])


def validate_tenant_config(raw: Mapping[str, Any]) -> list[FieldError]:
    """Every problem in one tenant's overrides block; empty when it is valid."""
    errs = f.Collector()
    _tenant(raw, errs)
    return errs.errors


def validate_tenant_patch(patch: Mapping[str, Any]) -> list[FieldError]:
    """The unknown fields a JSON merge patch of a tenant block names; empty if none.

    The merged block cannot show them when their value is null: merging
    drops that key, and a misspelt one was never there, so
    `{"max_querier_per_tenant": null}`, meant to remove a limit, changed
    nothing and was answered 200 (and `{"query_rejection": {"zzz": null}}`
    wrote an empty `query_rejection`).
    """
    errs = f.Collector()
    f.unknown(patch, TENANT_KEYS, "", errs)
    for key, keys in (
        ("query_priority", _QUERY_PRIORITY_KEYS),
        ("query_rejection", _QUERY_REJECTION_KEYS),
    ):
        inner = patch.get(key)
        if isinstance(inner, Mapping):
            f.unknown(inner, keys, key, errs)
    return errs.errors


def tenant_limits_from_dict(raw: Mapping[str, Any]) -> TenantLimits:
    """Build limits from the raw block; raises `ConfigInvalid` listing every error."""
    errs = f.Collector()
    limits = _tenant(raw, errs)
    if errs.errors:
        raise ConfigInvalid(errs.errors)
    return limits


def _number_out(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def _pair_out(pair: TimeRange | None, keys: tuple[str, str]) -> dict[str, str] | None:
    if pair is None:
        return None
    out = {
        key: format_duration(side)
        for key, side in zip(keys, (pair.min, pair.max), strict=True)
        if side
    }
    return out or None


def _attribute_out(attr: QueryAttribute) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "regex": attr.regex,
        "time_window": _pair_out(attr.time_window, ("start", "end")),
        "api_type": attr.api_type,
        "time_range_limit": _pair_out(attr.time_range_limit, ("min", "max")),
        "query_step_limit": _pair_out(attr.query_step_limit, ("min", "max")),
        "user_agent_regex": attr.user_agent_regex,
        "dashboard_uid": attr.dashboard_uid,
        "panel_id": attr.panel_id,
    }
    return {key: value for key, value in fields.items() if value}


def tenant_limits_to_dict(limits: TenantLimits) -> dict[str, Any]:
    """The canonical raw block: durations as strings, unset optional fields omitted."""
    out: dict[str, Any] = {"max_queriers_per_tenant": limits.max_queriers}
    if limits.max_outstanding is not None:
        out["max_outstanding_requests_per_tenant"] = limits.max_outstanding
    if limits.max_query_capacity:
        out["max_query_capacity"] = _number_out(limits.max_query_capacity)
    qp = limits.query_priority
    priorities: list[dict[str, Any]] = []
    for pdef in qp.priorities:
        item: dict[str, Any] = {"priority": pdef.priority}
        if pdef.reserved_queriers:
            item["reserved_queriers"] = _number_out(pdef.reserved_queriers)
        item["query_attributes"] = [_attribute_out(a) for a in pdef.query_attributes]
        priorities.append(item)
    out["query_priority"] = {
        "enabled": qp.enabled,
        "default_priority": qp.default_priority,
        "priorities": priorities,
    }
    qr = limits.query_rejection
    # Only when set, so a tenant without rejection rules exports as before.
    if qr.enabled or qr.query_attributes:
        out["query_rejection"] = {
            "enabled": qr.enabled,
            "query_attributes": [_attribute_out(a) for a in qr.query_attributes],
        }
    return out
