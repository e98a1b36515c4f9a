"""Read the scheduling-relevant fields out of a forwarded Cortex HTTP request.

A Cortex/Mimir query-frontend forwards the user's Prometheus API call to the
scheduler as an `httpgrpc.HTTPRequest` (method, URL with query string,
headers, body). Cortex's own scheduler never looks inside; we do, so that the
scheduler can compute the query component and the tenant's priority itself.

Parsing is deliberately lenient: a value we cannot read (a bad timestamp, an
odd step) becomes None instead of an error, because the querier will answer
the user with Prometheus' own 400 for it; the scheduler's job is only to
queue the request somewhere sensible. This module takes plain values, not
protobuf messages, so it stays independent of the generated code.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

from scheduler_core.bounds import cortex_step_seconds, duration_error, timestamp_error
from scheduler_core.durations import InvalidDuration, duration_text_ms
from scheduler_core.model import BOTH, INGESTER, STORE_GATEWAY

__all__ = [
    "FORWARDED_HEADERS",
    "READ_HEADERS",
    "TARGET_CACHE_SIZE",
    "ForwardedQuery",
    "api_type_of_path",
    "component_hint",
    "parse_duration_seconds",
    "parse_form_pairs",
    "parse_forwarded",
    "parse_forwarded_request",
    "parse_prometheus_time",
]

# The headers priority rules may look at, in their canonical spelling.
FORWARDED_HEADERS: tuple[str, ...] = ("User-Agent", "X-Dashboard-Uid", "X-Panel-Id")
_CANONICAL = {name.lower(): name for name in FORWARDED_HEADERS}
# Every header (lower-cased) the parse reads: a caller holding the headers in
# another form may hand over just these (`parse_forwarded`).
READ_HEADERS = frozenset({"content-type", *_CANONICAL})

_API_TYPES_BY_LAST_ELEMENT = {
    "query": "query",
    "query_range": "query_range",
    "series": "series",
    "labels": "labels",
    "values": "label_values",
    "metadata": "metadata",
}
# Components a Mimir frontend may name in `additionalQueueDimensions`.
_HINTED_COMPONENTS = frozenset({INGESTER, STORE_GATEWAY, BOTH})
_FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
# Go's strconv.ParseFloat syntax, which the querier's Prometheus API and
# Cortex use for times and steps: ASCII digits, "_" only between digits, no
# surrounding space (Python's float() takes spaces and any Unicode digit),
# and hex floats with their mandatory "p" exponent (which float() refuses).
_DIGITS = r"[0-9](?:_?[0-9])*"
_GO_DECIMAL = re.compile(
    rf"[+-]?(?:{_DIGITS}(?:\.(?:{_DIGITS})?)?|\.{_DIGITS})(?:[eE][+-]?{_DIGITS})?"
)
_GO_HEX = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+(?:\.[0-9a-fA-F]*)?|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+")
# Go's time.RFC3339Nano layout as time.Parse reads it: upper-case "T", one to
# nine fraction digits after "." or ",", "Z" or a zone with a colon.
# fromisoformat alone would also take a space for "T", no seconds, basic and
# week-date forms and "+0200", all of which Prometheus answers with a 400.
_RFC3339 = re.compile(
    r"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(?:[.,]([0-9]{1,9}))?"
    r"(Z|[+-][0-9]{2}:[0-9]{2})"
)
# Far longer than any real timestamp or duration; bounds parsing work.
_MAX_VALUE_LENGTH = 64


@dataclass(frozen=True, slots=True)
class ForwardedQuery:
    """What the scheduler reads from one forwarded HTTP request.

    `start`/`end` are unix seconds; an instant query has start == end (its
    `time`, or now when absent). `query` is the PromQL, or for series, labels
    and label-values calls the `match[]` selectors joined by "," (for
    display); `matchers` keeps those selectors apart, since a rule's regex
    matches a metadata call when it matches any one of them (as Cortex).
    `headers` holds only FORWARDED_HEADERS, under their canonical names.
    """

    api_type: str
    query: str = ""
    start: float | None = None
    end: float | None = None
    step: float | None = None
    headers: dict[str, str] = field(default_factory=dict)
    matchers: tuple[str, ...] = ()


def api_type_of_path(path: str) -> str:
    """The API type named by the path's last element, else "other"."""
    last = path.rstrip("/").rsplit("/", 1)[-1]
    return _API_TYPES_BY_LAST_ELEMENT.get(last, "other")


def parse_prometheus_time(value: str) -> float | None:
    """Unix seconds from a Prometheus time parameter, read as the querier reads it.

    Prometheus' `parseTime` (and Cortex's `util.ParseTime`): a Go float, or
    RFC3339 truncated to the millisecond. Anything else is None: the querier
    answers it with a 400, so no rule should see a time in it. A float keeps
    its digits (the inspector shows what was sent); matching rounds it to
    the millisecond as Prometheus does, alike for up to three decimals.
    """
    if not value or len(value) > _MAX_VALUE_LENGTH:
        return None
    seconds = _go_float(value)
    if seconds is None:
        return _parse_rfc3339(value)
    # Beyond Prometheus' minTime/maxTime (or inf, NaN) the time is unknown.
    return seconds if timestamp_error(seconds) is None else None


def parse_duration_seconds(value: str) -> float | None:
    """Seconds from a step as Cortex reads it (`parseDurationMs`): a Go float
    of seconds truncated to whole milliseconds (`cortex_step_seconds`), or a
    duration like 1m30s, counted in whole milliseconds as Go counts it."""
    if not value or len(value) > _MAX_VALUE_LENGTH:
        return None
    seconds = _go_float(value)
    if seconds is None:
        try:
            return duration_text_ms(value) / 1000
        except InvalidDuration:
            return None  # not a duration, or one beyond Go's time.Duration
    # A step Prometheus would refuse (beyond Go's time.Duration) is unknown.
    if seconds < 0 or duration_error(seconds) is not None:
        return None
    return cortex_step_seconds(seconds)


def _go_float(text: str) -> float | None:
    """`text` as Go's strconv.ParseFloat reads it; None where Go refuses it."""
    if _GO_DECIMAL.fullmatch(text):
        return float(text)
    if _GO_HEX.fullmatch(text):
        try:
            return float.fromhex(text)
        except OverflowError:
            return None  # Go's ErrRange: refused too
    return None


def component_hint(dimensions: Sequence[str]) -> str | None:
    """The query component a Mimir frontend computed, if it sent a known one.

    Mimir sends at most one `additionalQueueDimensions` value; an empty list
    means the frontend could not tell, so we classify the request ourselves.
    """
    for value in dimensions:
        if value in _HINTED_COMPONENTS:
            return value
    return None


def parse_forwarded_request(
    method: str,
    url: str,
    headers: Iterable[tuple[str, Sequence[str]]],
    body: bytes,
    *,
    now: float,
) -> ForwardedQuery:
    """Read api type, query, time range, step and headers from the request."""
    return parse_forwarded(method, url, _headers_by_lower_name(headers), body, now=now)


class _Target(NamedTuple):
    """What a request's method, URL and body say, whatever the time and headers.

    `at_now`: an instant query without `time`, evaluated at the caller's now.
    """

    api_type: str
    query: str
    start: float | None
    end: float | None
    step: float | None
    matchers: tuple[str, ...]
    at_now: bool


# Parsed targets by (method, URL, content type, body), oldest evicted first.
# Dashboards and rulers send the same URL over and over (Grafana aligns
# ranges to the step, and an instant query without `time` has nothing that
# changes); parsing one cost more than the queue's own work per request.
TARGET_CACHE_SIZE = 4096
_CACHED_BYTES = 4096  # a longer URL plus body is parsed every time, never kept
_targets: dict[tuple[str, str, str, bytes], _Target] = {}


def parse_forwarded(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    now: float,
) -> ForwardedQuery:
    """`parse_forwarded_request` with the headers already read: lower-cased
    name -> first value, as Go's Header.Get sees them (only READ_HEADERS
    matter)."""
    content_type = headers.get("content-type", "")
    target: _Target | None
    if len(url) + len(body) > _CACHED_BYTES:
        # Never kept, so not looked up either: hashing a long body costs.
        target = _target(method, url, content_type, body)
    else:
        key = (method, url, content_type, body)
        target = _targets.get(key)
        if target is None:
            target = _target(method, url, content_type, body)
            if len(_targets) >= TARGET_CACHE_SIZE:
                del _targets[next(iter(_targets))]
            _targets[key] = target
    kept = {}
    for lower, canonical in _CANONICAL.items():
        value = headers.get(lower)
        if value:
            kept[canonical] = value
    at_now = target.at_now
    return ForwardedQuery(
        api_type=target.api_type,
        query=target.query,
        start=now if at_now else target.start,
        end=now if at_now else target.end,
        step=target.step,
        headers=kept,
        matchers=target.matchers,
    )


def _path_and_query(url: str) -> tuple[str, str]:
    """The URL's path and query string, for any text.

    `urlsplit` refuses some authorities with ValueError (an unclosed `[`, a
    host that changes under NFKC). Raised here, that would end the Cortex
    frontend's whole stream and every query on it; such a URL is split at
    its first `?` instead (the path then still ends with the API's name).
    """
    try:
        split = urlsplit(url)
    except ValueError:
        path, _, query = url.partition("#")[0].partition("?")
        return path, query
    return split.path, split.query


def _target(method: str, url: str, content_type: str, body: bytes) -> _Target:
    path, query_string = _path_and_query(url)
    params = _form_params(method, query_string, content_type, body)
    api_type = api_type_of_path(path)
    at_now = api_type == "query" and not _first(params, "time")
    start, end = (None, None) if at_now else _time_range(api_type, params)
    matchers: tuple[str, ...] = ()
    if api_type in ("query", "query_range"):
        query = _first(params, "query")
    else:
        matchers = tuple(params.get("match[]", ()))
        query = ",".join(matchers)
    step = parse_duration_seconds(_first(params, "step")) if api_type == "query_range" else None
    return _Target(api_type, query, start, end, step, matchers, at_now)


def _time_range(api_type: str, params: dict[str, list[str]]) -> tuple[float | None, float | None]:
    if api_type == "query":
        instant = parse_prometheus_time(_first(params, "time"))
        return instant, instant
    return (
        parse_prometheus_time(_first(params, "start")),
        parse_prometheus_time(_first(params, "end")),
    )


def _headers_by_lower_name(headers: Iterable[tuple[str, Sequence[str]]]) -> dict[str, str]:
    # HTTP header names are case-insensitive; the first value of the first
    # occurrence wins, as Go's Header.Get does.
    found: dict[str, str] = {}
    for key, values in headers:
        lower = key.lower()
        if lower not in found and values:
            found[lower] = values[0]
    return found


def _form_params(
    method: str, query_string: str, content_type: str, body: bytes
) -> dict[str, list[str]]:
    """Query-string and form-body parameters, body values first (Go's r.Form)."""
    params: dict[str, list[str]] = {}
    media_type = content_type.split(";", 1)[0].strip().lower()
    # Go reads the body only when it says it is a form: with no Content-Type
    # it is application/octet-stream (RFC 7231), so the querier ignores it.
    reads_body = method.upper() in _BODY_METHODS and media_type == _FORM_CONTENT_TYPE
    if reads_body and body:
        _add_pairs(params, body.decode("utf-8", errors="replace"))
    _add_pairs(params, query_string)
    return params


def _add_pairs(params: dict[str, list[str]], encoded: str) -> None:
    for key, value in parse_form_pairs(encoded):
        bucket = params.get(key)
        if bucket is None:
            params[key] = [value]
        else:
            bucket.append(value)


def parse_form_pairs(encoded: str) -> list[tuple[str, str]]:
    """`urllib.parse.parse_qsl(encoded, keep_blank_values=True)`, result for result.

    Split on "&" only, empty fields skipped, a field without "=" is a name
    with a blank value, "+" is a space and %-escapes are UTF-8 with
    replacement characters. Written out because parse_qsl's generic path
    (str/bytes coercion, options) was most of its cost per request; fields
    with nothing to decode skip `unquote` altogether.
    """
    pairs = []
    for item in encoded.split("&"):
        if not item:
            continue
        name, _, value = item.partition("=")
        if "+" in item or "%" in item:
            name = unquote(name.replace("+", " "))
            value = unquote(value.replace("+", " "))
        pairs.append((name, value))
    return pairs


def _first(params: dict[str, list[str]], name: str) -> str:
    values = params.get(name)
    return values[0] if values else ""


def _parse_rfc3339(text: str) -> float | None:
    match = _RFC3339.fullmatch(text)
    if match is None:
        return None
    stamp, fraction, zone = match.groups()
    try:
        parsed = datetime.fromisoformat(stamp + ("+00:00" if zone == "Z" else zone))
    except ValueError:
        return None  # a month, day, hour, minute, second or zone out of range
    millis = int((fraction or "").ljust(3, "0")[:3])
    return (round(parsed.timestamp()) * 1000 + millis) / 1000
