"""One validator for tenant limits and scheduler settings, whatever their source.

The browser form, the REST API and Cortex runtime-config YAML all hand us the
same raw shape (Cortex's per-tenant overrides), so a single parse pass both
collects every `FieldError` and builds the model values: validation and
construction can never disagree. Paths are dotted and indexed
(`query_priority.priorities[1].query_attributes[0].regex`) so a UI can put
each message next to its field.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import lru_cache, partial
from typing import Any, cast

import re2

from scheduler_core.errors import ConfigInvalid, FieldError
from scheduler_core.model import (
    API_TYPES,
    PriorityDef,
    QueryAttribute,
    QueryPriority,
    QueueConfig,
    TenantLimits,
    TimeRange,
)

__all__ = [
    "MAX_ATTRIBUTES_PER_PRIORITY",
    "MAX_PRIORITIES",
    "MAX_REGEX_LENGTH",
    "TENANT_KEYS",
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
]

# Bounds keep one tenant's rules cheap to match on every enqueue.
MAX_PRIORITIES = 100
MAX_ATTRIBUTES_PER_PRIORITY = 50
MAX_REGEX_LENGTH = 1000

_MS = 0.001
# Prometheus units, largest first; the flag says the unit is only printed
# when it divides the duration exactly (as Prometheus prints 8d, not 1w1d).
_UNITS: tuple[tuple[str, int, bool], ...] = (
    ("y", 365 * 86_400_000, True),
    ("w", 7 * 86_400_000, True),
    ("d", 86_400_000, False),
    ("h", 3_600_000, False),
    ("m", 60_000, False),
    ("s", 1_000, False),
    ("ms", 1, False),
)
_DURATION_RE = re2.compile(
    r"(?:([0-9]+)y)?(?:([0-9]+)w)?(?:([0-9]+)d)?(?:([0-9]+)h)?"
    r"(?:([0-9]+)m)?(?:([0-9]+)s)?(?:([0-9]+)ms)?"
)
# Every top-level key of a tenant block (Cortex override names), set or not.
TENANT_KEYS = ("max_queriers_per_tenant", "max_outstanding_requests_per_tenant", "query_priority")
_LAYOUTS = ("tenant-first", "component-first")
_SELECTIONS = ("round-robin", "querier-worker-priority")


class InvalidDuration(ValueError):
    """A value is neither a Prometheus duration string nor a number of seconds."""


@lru_cache(maxsize=4096)
def compile_regex(pattern: str) -> Any:
    """Compile an RE2 pattern once; raises `re2.error` when RE2 rejects it.

    RE2 runs in linear time, so a tenant-supplied pattern can never stall
    the scheduler the way a backtracking regex could.
    """
    options = re2.Options()
    options.log_errors = False
    return re2.compile(pattern, options)


def _regex_error(pattern: str) -> str | None:
    try:
        compile_regex(pattern)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        text = reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
        return f"RE2 rejects this regex: {text}"
    return None


def parse_duration(value: object) -> float:
    """Seconds from a Prometheus duration ("1h30m", "0") or a number of seconds."""
    if isinstance(value, bool):
        raise InvalidDuration(f"not a duration: {value!r}")
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise InvalidDuration(f"not a finite duration: {value!r}")
        return float(value)
    if not isinstance(value, str):
        raise InvalidDuration(f"not a duration: {value!r}")
    if value == "0":
        return 0.0
    match = _DURATION_RE.fullmatch(value) if value else None
    if match is None:
        raise InvalidDuration(f'not a valid duration string: "{value}" (e.g. "2h", "1h30m", "0s")')
    total_ms = sum(
        int(group) * mult
        for group, (_, mult, _) in zip(match.groups(), _UNITS, strict=True)
        if group is not None
    )
    return total_ms * _MS


def format_duration(seconds: float) -> str:
    """The canonical Prometheus spelling of a duration, to the millisecond."""
    ms = round(abs(seconds) * 1000)
    if ms == 0:
        return "0s"
    parts: list[str] = []
    for unit, mult, exact in _UNITS:
        if exact and ms % mult:
            continue
        count, ms = divmod(ms, mult)
        if count:
            parts.append(f"{count}{unit}")
    return ("-" if seconds < 0 else "") + "".join(parts)


class _Collector:
    """Gathers every error of one parse pass instead of stopping at the first."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []

    def add(self, path: str, message: str) -> None:
        self.errors.append(FieldError(path or "(root)", message))


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _mapping(value: object, path: str, errs: _Collector) -> Mapping[str, Any] | None:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return cast(Mapping[str, Any], value)
    errs.add(path, f"must be a mapping, got {type(value).__name__}")
    return None


def _sequence(value: object, path: str, errs: _Collector) -> Sequence[Any] | None:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return value
    errs.add(path, f"must be a list, got {type(value).__name__}")
    return None


def _unknown(raw: Mapping[str, Any], allowed: Sequence[str], path: str, errs: _Collector) -> None:
    for key in raw:
        if key not in allowed:
            errs.add(_join(path, str(key)), "unknown field")


def _int(value: object, path: str, errs: _Collector, minimum: int | None = None) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        errs.add(path, f"must be an integer, got {type(value).__name__}")
        return None
    if minimum is not None and value < minimum:
        errs.add(path, f"must be >= {minimum}, got {value}")
        return None
    return value


def _number(value: object, path: str, errs: _Collector) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        errs.add(path, f"must be a finite number, got {value!r}")
        return None
    if value < 0:
        errs.add(path, f"must not be negative, got {value}")
        return None
    return value


def _duration(value: object, path: str, errs: _Collector, positive: bool = False) -> float | None:
    try:
        seconds = parse_duration(value)
    except InvalidDuration as exc:
        errs.add(path, str(exc))
        return None
    if seconds < 0 or (positive and seconds == 0):
        errs.add(path, f"must be {'> 0' if positive else '>= 0'}, got {value!r}")
        return None
    return seconds


def _text(value: object, path: str, errs: _Collector) -> str | None:
    """A string field; "" means unset, as in Cortex."""
    if value is None:
        return None
    if not isinstance(value, str):
        errs.add(path, f"must be a string, got {type(value).__name__}")
        return None
    return value or None


def _regex(value: object, path: str, errs: _Collector) -> str | None:
    pattern = _text(value, path, errs)
    if pattern is None:
        return None
    if len(pattern) > MAX_REGEX_LENGTH:
        errs.add(path, f"regex is {len(pattern)} characters long, at most {MAX_REGEX_LENGTH}")
        return None
    problem = _regex_error(pattern)
    if problem is not None:
        errs.add(path, problem)
        return None
    return pattern


def _pair(value: object, path: str, errs: _Collector, keys: tuple[str, str]) -> TimeRange | None:
    """A pair of optional durations; zero on a side means that side is unset."""
    raw = _mapping(value, path, errs)
    if raw is None:
        return None
    _unknown(raw, keys, path, errs)
    sides = [
        _duration(raw[key], _join(path, key), errs) if raw.get(key) is not None else None
        for key in keys
    ]
    low, high = (side or None for side in sides)
    return None if low is None and high is None else TimeRange(low, high)


def _window(value: object, path: str, errs: _Collector) -> TimeRange | None:
    window = _pair(value, path, errs, ("start", "end"))
    if window and window.min and window.max and window.min <= window.max:
        start, end = format_duration(window.min), format_duration(window.max)
        errs.add(path, f"start ({start}) must be greater than end ({end}): both are before now")
    return window


def _limit(value: object, path: str, errs: _Collector) -> TimeRange | None:
    limit = _pair(value, path, errs, ("min", "max"))
    if limit and limit.min and limit.max and limit.min > limit.max:
        low, high = format_duration(limit.min), format_duration(limit.max)
        errs.add(path, f"min ({low}) must not exceed max ({high})")
    return limit


def _panel_id(value: object, path: str, errs: _Collector) -> str | None:
    # YAML turns an unquoted `panel_id: 4` into an int; panel ids are numeric.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return _text(value, path, errs)


def _api_type(value: object, path: str, errs: _Collector) -> str | None:
    api_type = _text(value, path, errs)
    if api_type is not None and api_type not in API_TYPES:
        errs.add(path, f"unknown api_type {api_type!r}; allowed: {', '.join(API_TYPES)}")
        return None
    return api_type


_Parser = Callable[[object, str, _Collector], Any]
_ATTRIBUTE_FIELDS: dict[str, _Parser] = {
    "regex": _regex,
    "time_window": _window,
    "api_type": _api_type,
    "time_range_limit": _limit,
    "query_step_limit": _limit,
    "user_agent_regex": _regex,
    "dashboard_uid": _text,
    "panel_id": _panel_id,
}


def _attribute(value: object, path: str, errs: _Collector) -> QueryAttribute | None:
    raw = _mapping(value, path, errs)
    if raw is None:
        return None
    before = len(errs.errors)
    _unknown(raw, tuple(_ATTRIBUTE_FIELDS), path, errs)
    fields = {
        key: parse(raw[key], _join(path, key), errs)
        for key, parse in _ATTRIBUTE_FIELDS.items()
        if raw.get(key) is not None
    }
    attr = QueryAttribute(**fields)
    if attr == QueryAttribute() and len(errs.errors) == before:
        errs.add(path, "no field set: an attribute with no field matches nothing")
    return attr


def _priority(value: object, path: str, errs: _Collector) -> PriorityDef | None:
    raw = _mapping(value, path, errs)
    if raw is None:
        return None
    _unknown(raw, ("priority", "reserved_queriers", "query_attributes"), path, errs)
    if "priority" not in raw:
        errs.add(_join(path, "priority"), "required")
    level = _int(raw.get("priority"), _join(path, "priority"), errs) if "priority" in raw else None
    reserved_raw = raw.get("reserved_queriers")
    reserved = (
        0.0
        if reserved_raw is None
        else _number(reserved_raw, _join(path, "reserved_queriers"), errs)
    )
    attrs_path = _join(path, "query_attributes")
    raw_attrs = _sequence(raw.get("query_attributes"), attrs_path, errs)
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


def _query_priority(value: object, path: str, errs: _Collector) -> QueryPriority:
    raw = _mapping(value, path, errs)
    if raw is None:
        return QueryPriority()
    _unknown(raw, ("enabled", "default_priority", "priorities"), path, errs)
    enabled = raw.get("enabled", False)
    if not isinstance(enabled, bool):
        errs.add(_join(path, "enabled"), f"must be true or false, got {enabled!r}")
    default = _int(raw.get("default_priority", 0), _join(path, "default_priority"), errs)
    list_path = _join(path, "priorities")
    raw_list = _sequence(raw.get("priorities"), list_path, errs) or ()
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


def _tenant(raw_value: object, errs: _Collector) -> TenantLimits:
    raw = _mapping(raw_value, "", errs)
    if raw is None:
        return TenantLimits()
    _unknown(raw, TENANT_KEYS, "", errs)
    max_queriers = _int(raw.get("max_queriers_per_tenant", 0), "max_queriers_per_tenant", errs, 0)
    outstanding_raw = raw.get("max_outstanding_requests_per_tenant")
    outstanding = (
        None
        if outstanding_raw is None
        else _int(outstanding_raw, "max_outstanding_requests_per_tenant", errs, 1)
    )
    qp = _query_priority(raw.get("query_priority"), "query_priority", errs)
    return TenantLimits(max_queriers or 0, outstanding, qp)


def validate_tenant_config(raw: Mapping[str, Any]) -> list[FieldError]:
    """Every problem in one tenant's overrides block; empty when it is valid."""
    errs = _Collector()
    _tenant(raw, errs)
    return errs.errors


def tenant_limits_from_dict(raw: Mapping[str, Any]) -> TenantLimits:
    """Build limits from the raw block; raises `ConfigInvalid` listing every error."""
    errs = _Collector()
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
    return out


def _choice(options: tuple[str, ...]) -> Callable[[object, str, _Collector], object]:
    def check(value: object, path: str, errs: _Collector) -> object:
        if value not in options:
            errs.add(path, f"must be one of {', '.join(options)}, got {value!r}")
            return None
        return value

    return check


# raw key -> (QueueConfig attribute, parser); durations are seconds in the model.
_QUEUE_FIELDS: dict[str, tuple[str, Callable[[object, str, _Collector], object]]] = {
    "layout": ("layout", _choice(_LAYOUTS)),
    "component_selection": ("component_selection", _choice(_SELECTIONS)),
    "max_outstanding_requests_per_tenant": (
        "max_outstanding_requests_per_tenant",
        partial(_int, minimum=1),
    ),
    "querier_forget_delay": ("querier_forget_delay", _duration),
    "priority_aging": ("priority_aging_seconds", _duration),
    "query_ingesters_within": ("query_ingesters_within", partial(_duration, positive=True)),
    "query_store_after": ("query_store_after", partial(_duration, positive=True)),
}


def _queue_changes(raw_value: object, base: QueueConfig | None, errs: _Collector) -> dict[str, Any]:
    raw = _mapping(raw_value, "", errs)
    if raw is None:
        return {}
    _unknown(raw, tuple(_QUEUE_FIELDS), "", errs)
    changes: dict[str, Any] = {}
    for key, (attr, parse) in _QUEUE_FIELDS.items():
        if key in raw:
            before = len(errs.errors)
            value = parse(raw[key], key, errs)
            if len(errs.errors) == before:
                changes[attr] = value
    windows = {"query_ingesters_within", "query_store_after"}
    if (base is not None and windows & changes.keys()) or windows <= changes.keys():
        merged = replace(base or QueueConfig(), **changes)
        if merged.query_store_after >= merged.query_ingesters_within:
            # Mimir rejects this too: some recent data would be on neither component.
            errs.add(
                "query_store_after",
                f"must be less than query_ingesters_within "
                f"({format_duration(merged.query_store_after)} >= "
                f"{format_duration(merged.query_ingesters_within)})",
            )
    return changes


def validate_queue_settings(
    raw: Mapping[str, Any], base: QueueConfig | None = None
) -> list[FieldError]:
    """Every problem in a (possibly partial) scheduler-settings dict.

    With `base`, the keys not given are taken from it for cross-field checks.
    """
    errs = _Collector()
    _queue_changes(raw, base, errs)
    return errs.errors


def queue_config_from_dict(raw: Mapping[str, Any], base: QueueConfig) -> QueueConfig:
    """`base` with only the given keys changed (PATCH); raises `ConfigInvalid`."""
    errs = _Collector()
    changes = _queue_changes(raw, base, errs)
    if errs.errors:
        raise ConfigInvalid(errs.errors)
    return replace(base, **changes)


def queue_config_to_dict(cfg: QueueConfig) -> dict[str, Any]:
    """Every scheduler setting in raw form, durations as strings."""
    return {
        "layout": cfg.layout,
        "component_selection": cfg.component_selection,
        "max_outstanding_requests_per_tenant": cfg.max_outstanding_requests_per_tenant,
        "querier_forget_delay": format_duration(cfg.querier_forget_delay),
        "priority_aging": format_duration(cfg.priority_aging_seconds),
        "query_ingesters_within": format_duration(cfg.query_ingesters_within),
        "query_store_after": format_duration(cfg.query_store_after),
    }
