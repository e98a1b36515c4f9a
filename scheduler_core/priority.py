"""Cortex query-priority matching, with a reason for every decision.

Semantics follow Cortex's query-frontend (`rejectQueryOrSetPriority` and
`matchAttributeForExpressionQuery` / `matchAttributeForMetadataQuery`):
disabled gives 0; priorities are tried in config order and the first one with
ANY matching attribute wins; none matching gives `default_priority`. Within an
attribute every field that is set must match, and an attribute with no field
set matches nothing. Unlike Cortex we evaluate every field of an attribute
(the outcome is the same) so the explain view can list all failing fields.

Cortex prioritises only query and query_range requests. Series, labels,
label-values and metadata requests here use the fields Cortex's metadata
matcher (written for query rejection) looks at: api_type, regex over the
`match[]` selectors, time_window and time_range_limit over the request's own
start/end, and user_agent_regex; dashboard, panel and step are ignored.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import re2

from scheduler_core.durations import format_duration
from scheduler_core.regex import compile_regex
from scheduler_core.rules import PriorityDef, QueryAttribute, QueryInfo, TimeRange

__all__ = [
    "METADATA_API_TYPES",
    "PriorityMatch",
    "QueryPriority",
    "RuleReason",
    "attribute_reasons",
    "match_priority",
]

# Cortex matches these on the request's own start/end and `match[]`
# selectors, and ignores step, dashboard and panel for them.
METADATA_API_TYPES: frozenset[str] = frozenset({"series", "labels", "label_values", "metadata"})
# Cortex short-circuits these patterns for expression queries, so they match
# even an empty query; for metadata calls it short-circuits only `.*`, so a
# call with no `match[]` is matched by `.*` and by no other regex (`.+`
# included), and `.+` must match one of the selectors.
_MATCH_ALL = frozenset({".*", ".+"})
_METADATA_MATCH_ALL = ".*"
_SLACK = 60.0

Source = Literal["disabled", "default", "rule"]


@dataclass(frozen=True, slots=True)
class QueryPriority:
    """A tenant's `query_priority` block, with Cortex's matching semantics."""

    enabled: bool = False
    default_priority: int = 0
    priorities: tuple[PriorityDef, ...] = ()

    def __init__(
        self,
        enabled: bool = False,
        default_priority: int = 0,
        priorities: tuple[PriorityDef, ...] | list[PriorityDef] = (),
    ) -> None:
        object.__setattr__(self, "enabled", enabled)
        object.__setattr__(self, "default_priority", default_priority)
        object.__setattr__(self, "priorities", tuple(priorities))

    def priority_for(self, info: QueryInfo, now: float) -> int:
        """The priority Cortex would give this request (see `match_priority`)."""
        return match_priority(self, info, now).priority


@dataclass(frozen=True, slots=True)
class RuleReason:
    """Why one field (or a whole rule) did or did not match.

    `rule_index`/`attribute_index` point into `QueryPriority.priorities` and
    its `query_attributes`; None when the reason is about the whole config.
    """

    rule_index: int | None
    attribute_index: int | None
    field: str
    matched: bool
    message: str


@dataclass(frozen=True, slots=True)
class PriorityMatch:
    """The priority a request gets and the trail that led to it."""

    priority: int
    rule_index: int | None
    attribute_index: int | None
    reasons: tuple[RuleReason, ...]
    source: Source


@dataclass(frozen=True, slots=True)
class _Check:
    field: str
    matched: bool
    message: str


def match_priority(qp: QueryPriority, info: QueryInfo, now: float) -> PriorityMatch:
    """The priority Cortex would give `info` at time `now` (unix seconds)."""
    if not qp.enabled:
        reason = RuleReason(None, None, "enabled", False, "query priority is disabled: priority 0")
        return PriorityMatch(0, None, None, (reason,), "disabled")
    reasons: list[RuleReason] = []
    for i, pdef in enumerate(qp.priorities):
        if not pdef.query_attributes:
            message = "priority has no query_attributes, so it matches nothing"
            reasons.append(RuleReason(i, None, "query_attributes", False, message))
        for j, attr in enumerate(pdef.query_attributes):
            checks = list(_attribute_checks(attr, info, now))
            reasons.extend(RuleReason(i, j, c.field, c.matched, c.message) for c in checks)
            if checks and all(c.matched for c in checks):
                return PriorityMatch(pdef.priority, i, j, tuple(reasons), "rule")
            if not checks:
                reasons.append(RuleReason(i, j, "attribute", False, _empty_reason(attr, info)))
    message = f"no priority matched: default priority {qp.default_priority}"
    reasons.append(RuleReason(None, None, "default_priority", True, message))
    return PriorityMatch(qp.default_priority, None, None, tuple(reasons), "default")


def attribute_reasons(
    attr: QueryAttribute, info: QueryInfo, now: float, rule_index: int | None, index: int
) -> tuple[bool, tuple[RuleReason, ...]]:
    """Whether one attribute matches, and why: the same checks priorities use
    (query rejection shares them, as Cortex's attributes are one type)."""
    checks = list(_attribute_checks(attr, info, now))
    reasons = [RuleReason(rule_index, index, c.field, c.matched, c.message) for c in checks]
    if not checks:
        reasons.append(RuleReason(rule_index, index, "attribute", False, _empty_reason(attr, info)))
    return bool(checks) and all(c.matched for c in checks), tuple(reasons)


def _empty_reason(attr: QueryAttribute, info: QueryInfo) -> str:
    if attr == QueryAttribute():
        return "no field set, so the attribute matches nothing"
    return f"no field that is set applies to {info.api_type} requests, so it matches nothing"


def _attribute_checks(attr: QueryAttribute, info: QueryInfo, now: float) -> Iterator[_Check]:
    """One check per field that is set and applies to this request's API type."""
    metadata = info.api_type in METADATA_API_TYPES
    if attr.api_type:
        yield _Check(
            "api_type",
            attr.api_type == info.api_type,
            f"api_type is {info.api_type}, wants {attr.api_type}",
        )
    if attr.regex:
        yield _regex_check(attr.regex, info, metadata)
    if metadata:
        start, end, what = info.start, info.end, "request"
    else:
        start, end, what = info.select_start, info.select_end, "data-select"
    window, range_limit, step_limit = map(
        _active, (attr.time_window, attr.time_range_limit, attr.query_step_limit)
    )
    if window is not None:
        yield from _window_checks(window, start, end, now, what)
    if range_limit is not None:
        yield _range_check(range_limit, start, end, what)
    if step_limit is not None and info.api_type == "query_range":
        yield _step_check(step_limit, info.step)
    if attr.user_agent_regex:
        yield _user_agent_check(attr.user_agent_regex, info.user_agent)
    if attr.dashboard_uid and not metadata:
        yield _equal_check("dashboard_uid", attr.dashboard_uid, info.dashboard_uid)
    if attr.panel_id and not metadata:
        yield _equal_check("panel_id", attr.panel_id, info.panel_id)


def _active(pair: TimeRange | None) -> TimeRange | None:
    """The pair with Cortex's absolute values, or None when neither side is set."""
    if pair is None or not (pair.min or pair.max):
        return None
    return TimeRange(abs(pair.min) if pair.min else None, abs(pair.max) if pair.max else None)


def _search(pattern: str, text: str) -> bool | str:
    """True/False for an unanchored search, or why the pattern cannot be used.

    Validation keeps invalid patterns out; one that slips through matches
    nothing (Cortex would skip the check, which could promote every query).
    """
    try:
        return compile_regex(pattern).search(text) is not None
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        text = reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
        return f"regex {pattern!r} does not compile ({text}), so it matches nothing"


def _regex_check(pattern: str, info: QueryInfo, metadata: bool) -> _Check:
    if metadata:
        return _selectors_check(pattern, info)
    if pattern in _MATCH_ALL:
        return _Check("regex", True, f"regex {pattern!r} matches every query")
    outcome = _search(pattern, info.query)
    if isinstance(outcome, str):
        return _Check("regex", False, outcome)
    verdict = "found in" if outcome else "not found in"
    return _Check("regex", outcome, f"regex {pattern!r} {verdict} query")


def _selectors_check(pattern: str, info: QueryInfo) -> _Check:
    """Cortex's metadata matcher: the regex must match one `match[]` selector."""
    if pattern == _METADATA_MATCH_ALL:
        return _Check("regex", True, f"regex {pattern!r} matches every request")
    selectors = info.matchers if info.matchers is not None else (info.query,)
    selectors = tuple(s for s in selectors if s)
    if not selectors:
        return _Check("regex", False, f"regex {pattern!r}: the request has no match[] selectors")
    for index, selector in enumerate(selectors):
        outcome = _search(pattern, selector)
        if isinstance(outcome, str):
            return _Check("regex", False, outcome)
        if outcome:
            which = f"match[] selector {index + 1} of {len(selectors)}"
            return _Check("regex", True, f"regex {pattern!r} found in {which}")
    return _Check("regex", False, f"regex {pattern!r} found in none of the match[] selectors")


def _user_agent_check(pattern: str, user_agent: str) -> _Check:
    outcome = _search(pattern, user_agent)
    if isinstance(outcome, str):
        return _Check("user_agent_regex", False, outcome)
    verdict = "matches" if outcome else "does not match"
    return _Check(
        "user_agent_regex", outcome, f"user_agent_regex {pattern!r} {verdict} {user_agent!r}"
    )


def _equal_check(field: str, wanted: str, actual: str) -> _Check:
    shown = repr(actual) if actual else "absent"
    return _Check(field, wanted == actual, f"{field} is {shown}, wants {wanted!r}")


def _ago(now: float, t: float) -> str:
    delta = now - t
    if delta < 0:
        return f"{format_duration(-delta)} in the future"
    return f"{format_duration(delta)} ago"


def _floor_minute(t: float) -> float:
    # floor() refuses infinities and NaN; such a threshold compares as itself.
    return math.floor(t / 60.0) * 60.0 if math.isfinite(t) else t


def _ms(seconds: float) -> float:
    """Whole milliseconds, as Cortex compares times and durations; total
    over floats (an infinity or NaN stays itself, so it compares as before)."""
    ms = seconds * 1000.0  # may overflow to an infinity for a finite 1e306
    return float(round(ms)) if math.isfinite(ms) else ms


def _window_checks(
    window: TimeRange, start: float | None, end: float | None, now: float, what: str
) -> Iterator[_Check]:
    """Cortex's `isWithinTimeAttributes`: one minute of slack, floored to the minute."""
    if window.min:
        field, limit = "time_window.start", format_duration(window.min)
        threshold = _floor_minute(now - window.min - _SLACK)
        if start is None:
            yield _Check(field, False, f"{field}: {what} range unknown")
        elif _ms(start) < _ms(threshold):
            message = f"{field}: data from {_ago(now, start)} is older than now-{limit}"
            yield _Check(field, False, message)
        else:
            yield _Check(field, True, f"{field}: all data is newer than now-{limit}")
    if window.max:
        field, limit = "time_window.end", format_duration(window.max)
        threshold = _floor_minute(now - window.max + _SLACK)
        if end is None:
            yield _Check(field, False, f"{field}: {what} range unknown")
        elif _ms(end) > _ms(threshold):
            message = f"{field}: data up to {_ago(now, end)} is newer than now-{limit}"
            yield _Check(field, False, message)
        else:
            yield _Check(field, True, f"{field}: all data is older than now-{limit}")


def _bounds_check(field: str, value: float, limit: TimeRange, what: str) -> _Check:
    shown = format_duration(value)
    if limit.min and _ms(value) < _ms(limit.min):
        return _Check(
            field, False, f"{field}: {what} {shown} is below min {format_duration(limit.min)}"
        )
    if limit.max and _ms(value) > _ms(limit.max):
        return _Check(
            field, False, f"{field}: {what} {shown} is above max {format_duration(limit.max)}"
        )
    return _Check(field, True, f"{field}: {what} {shown} is within limits")


def _range_check(limit: TimeRange, start: float | None, end: float | None, what: str) -> _Check:
    # Cortex measures expression queries by their data-select range (so an
    # instant query spans at least the lookback delta) and metadata requests
    # by their own start/end.
    if start is None or end is None:
        return _Check("time_range_limit", False, f"time_range_limit: {what} range unknown")
    # In whole milliseconds, as Cortex subtracts its millisecond times.
    span = (_ms(end) - _ms(start)) / 1000.0
    return _bounds_check("time_range_limit", span, limit, f"{what} range")


def _step_check(limit: TimeRange, step: float | None) -> _Check:
    if step is None:
        return _Check("query_step_limit", False, "query_step_limit: step unknown")
    return _bounds_check("query_step_limit", step, limit, "step")
