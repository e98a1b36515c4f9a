"""A queue listing's filter as a client sends it: query parameters or a JSON body.

`filter_fields` validates every field of `api.wire.queue_rows.RequestFilter`
(which `RequestFilter.parse` builds from its answer) and raises
`FilterError` naming the first bad one, so a listing, a cancel, the
inspector's drill-down and a peer's query all refuse the same input alike.
Split from `queue_rows`, which re-exports `FilterError` and `STATES`.

`enqueued_before` is an instant (`_instant`): unix seconds, or RFC 3339
with a zone, as `POST explain/` reads its times. One more than
`MAX_AHEAD_SECONDS` ahead of this server's clock is refused: no request
can have been enqueued then, and it is what a client sending milliseconds
for seconds sends (a cancel so bounded would have bounded nothing).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from typing import Any

from scheduler_core.actor_path import parse_actor_path
from scheduler_core.bounds import int64_error, parse_decimal
from scheduler_core.cortex_http import parse_prometheus_time
from scheduler_core.federation import normalized_org_id, org_id_error
from scheduler_core.model import COMPONENTS
from scheduler_core.regex import regex_error
from scheduler_core.validation import MAX_REGEX_LENGTH

__all__ = ["MAX_AHEAD_SECONDS", "STATES", "FilterError", "filter_fields"]

STATES = ("queued", "in_flight")
# How far `enqueued_before` may lie ahead of this replica's clock: a count
# answered by a peer whose clock runs ahead (replicas warn past 1 s) still
# passes; a time in milliseconds (1,000 times too far) never does.
MAX_AHEAD_SECONDS = 60.0


class FilterError(ValueError):
    """A filter field is invalid; `field` names it, the message says why."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def filter_fields(raw: Mapping[str, Any]) -> dict[str, Any]:
    """`RequestFilter`'s fields from query parameters or a JSON body; raises FilterError."""

    def text(name: str) -> str:
        value = raw.get(name)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise FilterError(name, "must be a string")
        return value

    component = text("component") or None
    if component is not None and component not in COMPONENTS:
        raise FilterError("component", f"one of {', '.join(COMPONENTS)}")
    state = text("state") or None
    if state is not None and state not in STATES:
        raise FilterError("state", "queued or in_flight")
    tenant = text("tenant") or None
    # No request can wait under an org ID the doors refuse: say so, not "none found".
    problem = None if tenant is None else org_id_error(tenant)
    if problem is not None:
        raise FilterError("tenant", problem)
    if tenant is not None:
        tenant = normalized_org_id(tenant)  # `b|a` is queued as `a|b`
    regex = text("regex")
    if len(regex) > MAX_REGEX_LENGTH:
        # Compiled patterns are cached process-wide; a rule's limit bounds them.
        raise FilterError("regex", f"at most {MAX_REGEX_LENGTH} characters")
    if regex:
        problem = regex_error(regex)
        if problem is not None:
            raise FilterError("regex", problem)
    return dict(
        tenant=tenant,
        component=component,
        priority=_integer(raw.get("priority"), "priority"),
        state=state,
        search=text("search"),
        regex=regex,
        min_wait=_seconds(raw.get("min_wait"), "min_wait"),
        frontend=text("frontend"),
        actor="|".join(parse_actor_path(text("actor"))),
        enqueued_before=_instant(raw.get("enqueued_before"), "enqueued_before"),
    )


# An empty string is no number: `?priority=` is refused, not read as "any",
# so a client whose filter lost its value is told so. A priority is an int64
# (Cortex's type), so 40 nines matches nothing any request could have.
def _integer(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise FilterError(name, "must be an integer")
    if isinstance(value, int):
        parsed: int | None = value
    else:
        parsed = parse_decimal(value.strip(), signed=True) if isinstance(value, str) else None
    if parsed is None:
        raise FilterError(name, "must be an integer")
    if (problem := int64_error(parsed)) is not None:
        raise FilterError(name, problem if parsed.bit_length() <= 100 else "must fit int64")
    return parsed


# Plain ASCII decimals only: float() also reads "１" (fullwidth), "1_0",
# "1e3", "inf" and surrounding spaces, none of which a client means as seconds.
_DECIMAL_SECONDS = re.compile(r"[-+]?[0-9]{1,30}(?:\.[0-9]{1,30})?")


def _seconds(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise FilterError(name, "must be a number of seconds")
    if isinstance(value, str):
        if _DECIMAL_SECONDS.fullmatch(value) is None:
            raise FilterError(name, "must be a number of seconds in ASCII digits, such as 2.5")
        seconds = float(value)
    elif isinstance(value, int | float):
        try:
            seconds = float(value)
        except OverflowError:  # an int past float's range (a JSON frame's 1 then 400 zeros)
            seconds = float("inf")
    else:
        raise FilterError(name, "must be a number of seconds")
    if not seconds >= 0 or seconds == float("inf"):
        raise FilterError(name, "must be a finite number of seconds, 0 or more")
    return seconds


_INSTANT = "must be unix seconds or an RFC 3339 time with a zone"


def _instant(value: Any, name: str) -> float | None:
    """Unix seconds from a number, or from text as Prometheus reads a time."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise FilterError(name, _INSTANT)
    if isinstance(value, str):
        parsed = parse_prometheus_time(value)
        if parsed is None:
            raise FilterError(name, _INSTANT)
        seconds = parsed
    elif isinstance(value, int | float):
        try:
            seconds = float(value)
        except OverflowError:  # an int past float's range
            seconds = float("inf")
    else:
        raise FilterError(name, _INSTANT)
    if not math.isfinite(seconds):
        # NaN, 1e400, an integer past a float's range: not a time at all.
        raise FilterError(name, f"{_INSTANT}: a finite number of seconds")
    if seconds < 0:
        raise FilterError(name, "must be a time at or after 1970-01-01T00:00:00Z")
    ahead = seconds - time.time()
    if ahead > MAX_AHEAD_SECONDS:
        raise FilterError(
            name,
            f"is {ahead:.0f} s after this server's time (at most {MAX_AHEAD_SECONDS:.0f} s): "
            "unix seconds, not milliseconds",
        )
    return seconds
