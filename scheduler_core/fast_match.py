"""Rule matching for the admission path: the same verdicts as `priority`, no reasons.

`priority.match_priority` explains every field of every attribute it tries,
with messages, which is what the explain view needs and four times what
admitting a request needs. These functions answer the same question with
booleans only, reusing `priority`'s own helpers for every comparison, so the
two cannot drift apart; a property test (tests/scheduler_core/test_fast_match.py)
checks that they agree on random rules and requests.
"""

from __future__ import annotations

from scheduler_core.priority import (
    _MATCH_ALL,
    _METADATA_MATCH_ALL,
    _SLACK,
    METADATA_API_TYPES,
    QueryPriority,
    _active,
    _floor_minute,
    _ms,
    _search,
)
from scheduler_core.rules import QueryAttribute, QueryInfo, TimeRange

__all__ = ["attribute_matches", "first_attribute", "priority_match"]


def _regex_ok(pattern: str, info: QueryInfo, metadata: bool) -> bool:
    if not metadata:
        return pattern in _MATCH_ALL or _search(pattern, info.query) is True
    if pattern == _METADATA_MATCH_ALL:
        return True
    selectors = info.matchers if info.matchers is not None else (info.query,)
    return any(_search(pattern, s) is True for s in selectors if s)


def _window_ok(window: TimeRange, start: float | None, end: float | None, now: float) -> bool:
    if window.min:
        threshold = _floor_minute(now - window.min - _SLACK)
        if start is None or _ms(start) < _ms(threshold):
            return False
    if window.max:
        threshold = _floor_minute(now - window.max + _SLACK)
        if end is None or _ms(end) > _ms(threshold):
            return False
    return True


def _within(value: float, limit: TimeRange) -> bool:
    if limit.min and _ms(value) < _ms(limit.min):
        return False
    return not (limit.max and _ms(value) > _ms(limit.max))


def attribute_matches(attr: QueryAttribute, info: QueryInfo, now: float) -> bool:
    """Whether every field of `attr` that is set (and applies) matches `info`.

    An attribute with no such field matches nothing, as in `priority`.
    """
    metadata = info.api_type in METADATA_API_TYPES
    checked = False
    if attr.api_type:
        if attr.api_type != info.api_type:
            return False
        checked = True
    if attr.regex:
        if not _regex_ok(attr.regex, info, metadata):
            return False
        checked = True
    if metadata:
        start, end = info.start, info.end
    else:
        start, end = info.select_start, info.select_end
    window = _active(attr.time_window)
    if window is not None:
        if not _window_ok(window, start, end, now):
            return False
        checked = True
    range_limit = _active(attr.time_range_limit)
    if range_limit is not None:
        if start is None or end is None:
            return False
        if not _within((_ms(end) - _ms(start)) / 1000.0, range_limit):
            return False
        checked = True
    step_limit = _active(attr.query_step_limit)
    if step_limit is not None and info.api_type == "query_range":
        if info.step is None or not _within(info.step, step_limit):
            return False
        checked = True
    if attr.user_agent_regex:
        if _search(attr.user_agent_regex, info.user_agent) is not True:
            return False
        checked = True
    if attr.dashboard_uid and not metadata:
        if attr.dashboard_uid != info.dashboard_uid:
            return False
        checked = True
    if attr.panel_id and not metadata:
        if attr.panel_id != info.panel_id:
            return False
        checked = True
    return checked


def first_attribute(
    attributes: tuple[QueryAttribute, ...], info: QueryInfo, now: float
) -> int | None:
    """Index of the first attribute that matches, or None."""
    for index, attr in enumerate(attributes):
        if attribute_matches(attr, info, now):
            return index
    return None


def priority_match(
    qp: QueryPriority, info: QueryInfo, now: float
) -> tuple[int, int | None, int | None]:
    """(priority, rule index, attribute index), as `match_priority` decides them."""
    if not qp.enabled:
        return 0, None, None
    for rule, pdef in enumerate(qp.priorities):
        index = first_attribute(pdef.query_attributes, info, now)
        if index is not None:
            return pdef.priority, rule, index
    return qp.default_priority, None, None
