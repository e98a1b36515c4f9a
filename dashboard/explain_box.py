"""The tenant editor's explain box: one sample request through the draft's rules.

`run_explain` reads the box's fields (`explain_inputs`), refuses one it
cannot read by naming it, and runs the draft through the same explain
selector as the REST API, so what the box says is what the scheduler will
do. The editor's views (`dashboard.views_tenants`) render the answer.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

from api.rest.views.explain import actor_body, known_queriers, queriers_body
from api.store import selectors
from api.store.exceptions import ConfigValidationError
from dashboard.templatetags.dashboard_tags import field_label
from scheduler_core.bounds import request_times_error
from scheduler_core.classify import EXPRESSION_API_TYPES, parses
from scheduler_core.errors import FieldError
from scheduler_core.model import API_TYPES
from scheduler_core.validation import InvalidDuration, format_duration, parse_duration

__all__ = [
    "EXPLAIN_DEFAULTS",
    "EXPLAIN_FIELDS",
    "NOT_A_BLOCK",
    "explain_inputs",
    "rules_problem",
    "run_explain",
    "selector_lines",
]

NOT_A_BLOCK = "Fix the YAML first: it is no tenant block."
# Errors named in a box's one line; the editor shows every one at its field.
_NAMED_ERRORS = 3

EXPLAIN_FIELDS = (
    "query",
    "api_type",
    "start",
    "end",
    "step",
    "user_agent",
    "dashboard_uid",
    "panel_id",
    "actor_path",
    "matchers",
)
EXPLAIN_DEFAULTS = {"api_type": "query_range", "start": "1h", "end": "0s", "step": "30s"}


def explain_inputs(post: Any) -> dict[str, str]:
    return {k: post.get(f"explain_{k}", EXPLAIN_DEFAULTS.get(k, "")) for k in EXPLAIN_FIELDS}


# The explain box's duration fields, by the label the page shows.
_DURATIONS = (("start", "Start (ago)"), ("end", "End (ago)"), ("step", "Step"))


def rules_problem(errors: Sequence[FieldError]) -> str:
    """Why a draft cannot be tried: its first errors, each named as the editor labels it.

    "Fix the 1 error(s) in the rules first" left the operator hunting for
    it, and a draft can hold one in a part of the form scrolled away.
    """
    named = [f"{field_label(e.path) or '(whole block)'}: {e.message}" for e in errors]
    more = len(named) - _NAMED_ERRORS
    tail = f"; and {more} more" if more > 0 else ""
    return f"Fix the rules first: {'; '.join(named[:_NAMED_ERRORS])}{tail}."


def selector_lines(text: str) -> list[str]:
    """The match[] selectors box, one selector a line.

    A browser posts a textarea's line breaks as CRLF. Empty lines are no
    selectors: an empty `match[]` matches nothing (the rules skip it), so
    leaving one out changes no answer, and a trailing line break adds none.
    """
    return [line for line in text.replace("\r\n", "\n").split("\n") if line]


def _selectors_problem(inputs: dict[str, str], lines: list[str]) -> str | None:
    """Why the query and selectors boxes cannot be read together, as `explain/` refuses them."""
    if not lines:
        if inputs["api_type"] in EXPRESSION_API_TYPES and not inputs["query"].strip():
            return "Type a query to explain."
        return None
    if inputs["api_type"] in EXPRESSION_API_TYPES:
        return f"match[] selectors: a {inputs['api_type']} call has none; empty that box."
    if inputs["query"].strip() and inputs["query"] != ",".join(lines):
        # The queue lists such a call's query as this join; another text
        # beside the selectors would leave it unclear which was explained.
        return "Query: with match[] selectors, leave it empty or give their ',' join."
    return None


def run_explain(tenant_id: str, draft: dict[str, Any], inputs: dict[str, str]) -> dict[str, Any]:
    """The explain box's content for a draft block and a sample request.

    With selectors in the match[] box (a series, labels or label values
    call), each is judged on its own, as the gRPC door judges a forwarded
    call's; left empty, the query is the call's one selector, as the
    websocket door reads its `query`. A metadata call may have none.
    """
    now = time.time()
    lines = selector_lines(inputs["matchers"])
    asked = _selectors_problem(inputs, lines)
    if asked is not None:
        return {"problem": asked}
    spans: dict[str, float | None] = {}
    unread = []
    for key, label in _DURATIONS:
        try:
            spans[key] = parse_duration(inputs[key]) if inputs[key].strip() else None
        except InvalidDuration as exc:
            unread.append(f"{label}: {exc}")
    if unread:
        return {"problem": "; ".join(unread)}
    start, end, step = (
        None if spans["start"] is None else now - spans["start"],
        None if spans["end"] is None else now - spans["end"],
        spans["step"],
    )
    if inputs["api_type"] == "query" and end is not None:
        # Grafana sends an instant query's `time` as its range's end (now):
        # read at Start (1h ago by default), a time_window rule matched
        # what Grafana's request does not. Start and Step mean nothing then.
        start, step = end, None
    # The same check as enqueue's on both protocols and the REST explain's.
    times = request_times_error(start, end, step)
    if times is not None:
        return {"problem": f"Time range: {times.message}."}
    if inputs["api_type"] not in API_TYPES:
        return {"problem": f"Unknown API type {inputs['api_type']!r}."}
    headers = {
        "User-Agent": inputs["user_agent"],
        "X-Dashboard-Uid": inputs["dashboard_uid"],
        "X-Panel-Id": inputs["panel_id"],
    }
    try:
        found = selectors.query_explain(
            tenant_id=tenant_id,
            query=",".join(lines) if lines else inputs["query"],
            api_type=inputs["api_type"],
            start=start,
            end=end,
            step=step,
            headers={k: v for k, v in headers.items() if v},
            now=now,
            draft_config=draft,
            matchers=lines or None,
        )
    except ConfigValidationError as exc:
        return {"problem": rules_problem(exc.errors)}
    config = selectors.queue_config_get()
    actor = actor_body({config.actor_path_header: inputs["actor_path"]}, config)
    # Classification reads the query's selectors; one it cannot parse reads
    # unknown data, which the page says rather than leave "unknown" unexplained.
    unparsed = inputs["api_type"] in EXPRESSION_API_TYPES and not parses(inputs["query"])
    return {**_explanation(found), "actor": actor, "unparsed": unparsed}


def _ago_text(seconds: float) -> str:
    """A span back from now, to the second: the select range's milliseconds are noise here."""
    return format_duration(round(seconds) if math.isfinite(seconds) and seconds >= 1 else seconds)


def _explanation(found: Any) -> dict[str, Any]:
    match, rejection = found.match, found.rejection
    rules: dict[int, dict[str, Any]] = {}
    general = []
    levels = [p.priority for p in found.limits.query_priority.priorities]
    for reason in match.reasons:
        if reason.rule_index is None:
            general.append(reason)
            continue
        rule = rules.setdefault(
            reason.rule_index,
            {"index": reason.rule_index, "priority": levels[reason.rule_index], "reasons": []},
        )
        rule["reasons"].append(reason)
    select = found.select_range
    return {
        "component": found.component,
        "select": None
        if select is None
        else (_ago_text(found.now - select[0]), _ago_text(found.now - select[1])),
        "priority": match.priority,
        "source": match.source,
        "rule_index": match.rule_index,
        "attribute_index": match.attribute_index,
        "rules": [rules[i] for i in sorted(rules)],
        "general": general,
        "queriers": queriers_body(found.limits, known_queriers()),
        "rejected_by": rejection.attribute_index if rejection is not None else None,
        "rejection_reasons": list(rejection.reasons) if rejection is not None else [],
    }
