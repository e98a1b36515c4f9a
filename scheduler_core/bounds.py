"""What Cortex itself can load: the bounds on every number a client may send.

A value the validator or a protocol accepts is later formatted, compared,
exported as runtime-config YAML a real Cortex must load, and used in the
arithmetic of classification, so it must fit the types Cortex keeps it in:
durations in Go's `time.Duration` (int64 nanoseconds, about 292 years),
counts and priorities in int64, timestamps within the range Prometheus' HTTP
API parses (its `minTime`/`maxTime`, about 292 million years either side of
1970), tenant IDs at most 150 characters (Cortex's `tenant.ValidTenantID`),
and documents nested at most `MAX_DOCUMENT_DEPTH` levels. Querier IDs
(Cortex takes any string, in practice a host name) are held to what logs,
pages and metric labels can show as one line: `querier_id_error`.
Nothing here imports the rest of the package, so every layer can share one
set of limits, `quoted` the one way an error message echoes what a client
sent (never a megabyte back), and `request_times_error` is the one check enqueue (both
protocols) and explain apply to a request's start, end and step, as
`cortex_step_seconds` is the one reading of a step's number of seconds.
"""

from __future__ import annotations

import math
import re

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "MAX_DURATION_SECONDS",
    "MAX_DOCUMENT_DEPTH",
    "MAX_DURATION_TEXT",
    "MAX_QUERIER_ID_LENGTH",
    "MAX_TENANT_ID_LENGTH",
    "MAX_TIMESTAMP",
    "MIN_TIMESTAMP",
    "TENANT_ID_ALPHABET",
    "TENANT_ID_CHARACTER",
    "TimesError",
    "cortex_step_seconds",
    "duration_error",
    "int64_error",
    "parse_decimal",
    "quoted",
    "querier_id_error",
    "request_times_error",
    "tenant_id_unsupported",
    "timestamp_error",
]

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
# Go's time.Duration is int64 nanoseconds; durations here are kept to the
# millisecond (Prometheus' resolution), so the largest is 2562047h47m16s854ms.
MAX_DURATION_SECONDS = (INT64_MAX // 1_000_000) / 1000
MAX_DURATION_TEXT = "2562047h47m16s854ms"
# Prometheus' API: minTime = time.Unix(math.MinInt64/1000+62135596801, 0),
# maxTime = time.Unix(math.MaxInt64/1000-62135596801, 999999999); so a
# timestamp in milliseconds always fits int64.
MAX_TIMESTAMP = float(INT64_MAX // 1000 - 62135596801)
MIN_TIMESTAMP = -MAX_TIMESTAMP
# Cortex's `tenant.ValidTenantID` (pkg/tenant): at most 150 characters, from
# an alphabet that survives HTTP headers and object-store paths.
MAX_TENANT_ID_LENGTH = 150
# Spelled out: "!-_" would read as a range of characters.
TENANT_ID_ALPHABET = "letters, digits and ! - _ . * ' ( )"
# One character of that alphabet, as a regex class (the OpenAPI schema's pattern too).
TENANT_ID_CHARACTER = "[A-Za-z0-9!_.*'()-]"
_TENANT_ID_CHARACTERS = re.compile(TENANT_ID_CHARACTER + "*")
# Our own limit, not Cortex's: how deep arrays/objects (mappings/lists) may
# nest in any document a client sends (websocket frames, REST bodies, YAML
# files). Far deeper than any real one (a tenant block nests 9 levels), far
# shallower than where Python's recursion would give out in what walks it.
MAX_DOCUMENT_DEPTH = 100


# Far past int64's 19 digits, far short of the 4,300 past which int() raises.
_DECIMAL = re.compile(r"[0-9]{1,40}")


def parse_decimal(text: str, *, signed: bool = False) -> int | None:
    """The integer a plain decimal text names, else None.

    ASCII digits only (with `signed`, after one `+` or `-`), at most 40 of
    them. `str.isdigit` also says yes to "²" and to "٣", which int() refuses
    or reads, and int() raises on a text of thousands of digits; a query
    parameter or form field read with `isdigit` and `int` answered either
    with a 500. Callers check the range they need (`int64_error`).
    """
    digits = text[1:] if signed and text[:1] in ("+", "-") else text
    if _DECIMAL.fullmatch(digits) is None:
        return None
    return int(text)


def tenant_id_unsupported(text: str) -> str:
    """The characters of `text` no Cortex tenant ID may hold, sorted, each once ("" for none).

    One regex match when there are none: both doors check every request's tenant.
    """
    if _TENANT_ID_CHARACTERS.fullmatch(text):
        return ""
    return "".join(sorted(set(_TENANT_ID_CHARACTERS.sub("", text))))


MAX_QUERIER_ID_LENGTH = 256  # a host name is at most 253
# Unicode's control characters (category Cc): C0, DEL and C1.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def querier_id_error(querier_id: str) -> str | None:
    """Why a querier may not connect under `querier_id`, or None.

    A newline in an ID forged log lines under the querier's name, and a NUL
    is a string PostgreSQL cannot store; Cortex's queriers send their host
    name, which never holds either.
    """
    if not querier_id:
        return "no querier ID"
    if len(querier_id) > MAX_QUERIER_ID_LENGTH:
        return f"querier ID is longer than {MAX_QUERIER_ID_LENGTH} characters"
    control = _CONTROL.search(querier_id)
    if control is not None:
        return f"querier ID contains control character U+{ord(control.group()):04X}"
    return None


def int64_error(value: int) -> str | None:
    """Why an integer does not fit int64, or None."""
    if INT64_MIN <= value <= INT64_MAX:
        return None
    return f"must fit a 64-bit integer ({INT64_MIN} to {INT64_MAX}), got {value}"


def _within(value: float, low: float, high: float) -> bool:
    # An int too large for a float (JSON allows 1e400 written out) is out.
    if isinstance(value, int):
        return low <= value <= high
    return math.isfinite(value) and low <= value <= high


def duration_error(seconds: float) -> str | None:
    """Why a duration in seconds is not a Go time.Duration, or None."""
    if _within(seconds, -MAX_DURATION_SECONDS, MAX_DURATION_SECONDS):
        return None
    return f"must be at most {MAX_DURATION_TEXT} (about 292 years, the largest Go time.Duration)"


def timestamp_error(seconds: float) -> str | None:
    """Why unix seconds are not a time Prometheus' API accepts, or None."""
    if _within(seconds, MIN_TIMESTAMP, MAX_TIMESTAMP):
        return None
    return f"must be unix seconds between {MIN_TIMESTAMP:.0f} and {MAX_TIMESTAMP:.0f}"


def cortex_step_seconds(seconds: float) -> float:
    """A step of `seconds` as Cortex's query-frontend reads it (`parseDurationMs`).

    The float times 1000, truncated toward zero to whole milliseconds as Go's
    int64() does: 1.0009 is 1 s, 0.0005 is 0 (a step Cortex then refuses),
    and 1.001 is 1 s too, since 1.001 * 1000 is 1000.999... in binary. Both
    doors read a step through this, so a `query_step_limit` matches a step
    alike whichever door it came through. Total over floats: one whose
    product is not finite is returned as it is, for `request_times_error`.
    """
    ms = seconds * 1000
    return math.trunc(ms) / 1000 if math.isfinite(ms) else seconds


class TimesError(ValueError):
    """A request's start, end or step is out of bounds; `field` names which."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def request_times_error(
    start: float | None, end: float | None, step: float | None
) -> TimesError | None:
    """The first problem with a request's times, or None.

    Prometheus refuses an end before the start and a step that is not
    positive; both protocols' enqueue and the explain call ask this one
    function, so they can never disagree about what a request may say.
    """
    for field, value in (("start", start), ("end", end)):
        if value is not None and (problem := timestamp_error(value)) is not None:
            return TimesError(field, f"{field} {problem}")
    if start is not None and end is not None and start > end:
        return TimesError("start", "start must not be after end")
    if step is not None:
        if not _within(step, 0, math.inf) or step <= 0:
            return TimesError(
                "step",
                "step must be a positive number of seconds, at least 0.001: "
                "Cortex reads a step to the millisecond",
            )
        if (problem := duration_error(step)) is not None:
            return TimesError("step", f"step {problem}")
    return None


def quoted(value: object, limit: int = 512) -> str:
    """`value` as an error message quotes it: its `repr`, whole when short.

    Longer, only its first `limit` characters and its length: a reply that
    echoed a 900 KB message type or org ID in full cost its sender nothing
    and the server a megabyte per refusal. 512 holds three full-length
    tenant IDs, so a federated ID's refusal still names its start whole.
    """
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}... ({len(value)} characters)"
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
