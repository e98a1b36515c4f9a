"""Priority and rejection of forwarded requests, case by case against Cortex.

Cortex v1.15.3 (the frontends and queriers that connect to us) has no query
priority and no query rejection at all: its overrides carry neither block
(pkg/util/validation/limits.go:36-123, the `Limits` struct), and its
scheduler queues the forwarded request without reading it
(pkg/scheduler/scheduler.go:270-296). Both arrived in later Cortex releases,
in the frontend's tripperware (`rejectQueryOrSetPriority`,
`matchAttributeForExpressionQuery`, `matchAttributeForMetadataQuery`), which
is where the matching cases below come from ("newer Cortex"). What 1.15.3
decides is what reaches us, and how its querier reads it; those cases cite
the v1.15.3 tree (file:line).

Each case goes through what the gRPC door does: `parse_forwarded_request`,
`classify`, `judge`. Where we deliberately differ, the comment says so and
the expectation is ours (docs/DESIGN.md §7.6).
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

import pytest

from scheduler_core.classify import classify
from scheduler_core.cortex_http import (
    ForwardedQuery,
    parse_duration_seconds,
    parse_forwarded_request,
    parse_prometheus_time,
)
from scheduler_core.model import (
    PriorityDef,
    QueryAttribute,
    QueryPriority,
    QueryRejection,
    TenantLimits,
    TimeRange,
)
from scheduler_core.rejection import judge

NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z
HOUR = 3600.0
WINDOW_EDGE = (NOW - 2 * HOUR - 60) // 60 * 60
API = "/prometheus/api/v1"
FORM = "application/x-www-form-urlencoded"

# Config order is deliberate: 3 comes before 5 and 4, so "first match wins"
# and "highest wins" give different answers.
PRIORITY = QueryPriority(
    enabled=True,
    default_priority=1,
    priorities=[
        PriorityDef(
            3, query_attributes=[QueryAttribute(regex="up", time_window=TimeRange(2 * HOUR))]
        ),
        PriorityDef(5, query_attributes=[QueryAttribute(regex="special")]),
        PriorityDef(4, query_attributes=[QueryAttribute(regex="up")]),
        PriorityDef(2, query_attributes=[QueryAttribute(api_type="series")]),
    ],
)
REJECTION = QueryRejection(enabled=True, query_attributes=[QueryAttribute(regex="forbidden")])
LIMITS = TenantLimits(query_priority=PRIORITY, query_rejection=REJECTION)


def forwarded(
    method: str, url: str, body: str = "", content_type: str | None = None
) -> ForwardedQuery:
    headers = [] if content_type is None else [("Content-Type", [content_type])]
    return parse_forwarded_request(method, url, headers, body.encode(), now=NOW)


def verdict(request: ForwardedQuery, limits: TenantLimits = LIMITS) -> int | str:
    """The priority the door gives `request`, or "422" when a rule rejects it."""
    found = classify(
        query=request.query,
        api_type=request.api_type,
        start=request.start,
        end=request.end,
        step=request.step,
        headers=request.headers,
        now=NOW,
        matchers=request.matchers,
    )
    decided = judge(limits, found.info, NOW)
    return "422" if decided.rejected else decided.priority


def go_float(seconds: float) -> str:
    """Seconds as Go's FormatFloat(f, 'f', -1, 64) writes them."""
    return str(int(seconds)) if seconds.is_integer() else repr(seconds)


def instant(query: str, *extra: tuple[str, str]) -> str:
    return f"{API}/query?{urlencode([('query', query), *extra])}"


def range_piece(query: str, start: float, end: float, step: float = 60.0) -> str:
    """A range query as the 1.15.3 frontend forwards it: its codec rebuilds
    every one as GET with url.Values.Encode (sorted keys, "+" for spaces),
    times as float seconds (queryrange/query_range.go:225-259,
    tripperware/query.go:165-168)."""
    params = {
        "end": go_float(end),
        "query": query,
        "start": go_float(start),
        "stats": "",
        "step": go_float(step),
    }
    return f"{API}/query_range?{urlencode(params)}"


# --- What reaches us, read as the querier reads it -------------------------


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [
        # Prometheus' parseTime (vendor/.../prometheus/web/api/v1/api.go:1655-1675,
        # Cortex's own util/time.go:38-49): a Go float, or RFC3339Nano.
        ("1700000000", NOW),
        ("1700000000.5", NOW + 0.5),
        ("1_700_000_000", NOW),  # Go's ParseFloat takes "_" between digits
        ("0x1p30", 1_073_741_824.0),  # and hex floats, which float() refuses
        ("2023-11-14T22:13:20Z", NOW),
        ("2023-11-14T22:13:20,25Z", NOW + 0.25),  # Go reads "," as the decimal point
        ("2023-11-15T00:13:20+02:00", NOW),
        # Truncated to the millisecond (TimeToMillis divides UnixNano), not rounded.
        ("2023-11-14T22:13:20.9999Z", NOW + 0.999),
    ],
)
def test_a_time_go_reads_is_read_to_the_same_millisecond(raw: str, seconds: float) -> None:
    assert parse_prometheus_time(raw) == pytest.approx(seconds, abs=1e-6)


@pytest.mark.parametrize(
    "raw",
    [
        " 1700000000",  # Go's ParseFloat takes no spaces; float() did
        "1700000000\n",
        "\u0661\u0667\u0660\u0660",  # Arabic-Indic digits: float() read 1700
        "2023-11-14 22:13:20Z",  # fromisoformat's space for "T"
        "2023-11-14T22:13Z",  # no seconds
        "20231114T221320Z",  # ISO 8601 basic form
        "2023-W46-2T22:13:20Z",  # ISO week date
        "2023-11-14T22:13:20+0200",  # zone without its colon
        "2023-11-14T22:13:20.Z",  # a point with no digits
        "2023-11-14T22:13:20.1234567891Z",  # ten fraction digits
        "2023-11-14t22:13:20z",
    ],
)
def test_a_time_the_querier_refuses_is_unknown_here_too(raw: str) -> None:
    # Each is a 400 from the querier; read as a time, it could match a
    # time_window rule Cortex never would (it evaluates at the epoch then).
    assert parse_prometheus_time(raw) is None


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [
        # parseDurationMs (queryrange/query_range.go:374-386): int64(d*1000),
        # so a float step is truncated to whole milliseconds.
        ("0.0015", 0.001),
        ("15.9999", 15.999),
        ("1m30s", 90.0),  # else model.ParseDuration
        ("0", 0.0),
    ],
)
def test_a_step_is_truncated_to_the_millisecond_as_cortex_reads_it(
    raw: str, seconds: float
) -> None:
    assert parse_duration_seconds(raw) == seconds


@pytest.mark.parametrize("raw", [" 15", "15 ", "\u0661\u0665s", "\u0661\u0665"])
def test_a_step_go_refuses_is_unknown(raw: str) -> None:
    assert parse_duration_seconds(raw) is None


def test_a_post_body_without_content_type_is_not_a_form() -> None:
    # Go's parsePostForm treats a missing Content-Type as
    # application/octet-stream and reads no form, so the querier runs the
    # URL's query. (A 1.15.3 frontend even drops such a body: its handler's
    # ParseForm never reads it, transport/handler.go:138-149.)
    request = forwarded("POST", instant("rate(x[5m])"), body="query=special")
    assert (request.query, verdict(request)) == ("rate(x[5m])", 1)


@pytest.mark.parametrize(
    ("method", "content_type", "query"),
    [
        ("POST", FORM, "special"),
        ("POST", "Application/X-WWW-Form-Urlencoded; charset=utf-8", "special"),
        ("PUT", FORM, "special"),
        ("PATCH", FORM, "special"),
        ("DELETE", FORM, "rate(x[5m])"),  # Go reads a body for POST, PUT, PATCH only
        ("POST", "application/json", "rate(x[5m])"),
    ],
)
def test_a_form_body_is_read_first_exactly_when_go_reads_it(
    method: str, content_type: str, query: str
) -> None:
    # A 1.15.3 frontend forwards an instant query as it came (method, URL,
    # buffered body, headers: tripperware/roundtrip.go:146-160,
    # transport/roundtripper.go:36-40); r.FormValue takes body values first.
    request = forwarded(
        method, instant("rate(x[5m])"), body="query=special", content_type=content_type
    )
    assert request.query == query


@pytest.mark.parametrize(
    ("encoded", "query"),
    [
        ("sum+(special)", "sum (special)"),
        ("sum%20(special)", "sum (special)"),
        ("a%2Bspecial", "a+special"),
    ],
)
def test_plus_and_percent_twenty_are_both_spaces_and_percent_2b_a_plus(
    encoded: str, query: str
) -> None:
    request = forwarded("GET", f"{API}/query?query={encoded}")
    assert (request.query, verdict(request)) == (query, 5)


# --- Matching ------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        # No `time`: Prometheus evaluates at now (api.go:400, parseTimeParam
        # default, :1643-1653); newer Cortex's FindMinMaxTime does the same.
        (instant("up"), 3),
        # An empty `time=` is "absent" for FormValue as well.
        (instant("up", ("time", "")), 3),
        (instant("up", ("time", go_float(NOW - 3 * HOUR))), 4),
        # DIFFERS (not fixed): an unreadable `time` is a 400 from the querier.
        # Newer Cortex then evaluates at the epoch (its times stay 0), so no
        # time_window passes (4); the time now reads as unknown here, but
        # `classify.query_info` evaluates an instant query without a time at
        # now, as the websocket door needs, so the window passes (3).
        (instant("up", ("time", f" {go_float(NOW)}")), 3),
        (instant("up", ("time", "2023-11-14 22:13:20Z")), 3),
        # Several priorities match: the first in config order wins, not the highest.
        (instant("special_up"), 3),
        (instant("special"), 5),
        # Regexes are compiled as written and searched (Go's MatchString),
        # never wrapped in ^(?:...)$.
        (instant("sum(rate(special_total[5m]))"), 5),
        # Matched against the decoded `query` parameter only, never the URL.
        (f"{instant('rate(x[5m])')}&special=1", 1),
        # None matches: default_priority.
        (instant("rate(x[5m])"), 1),
        # Rejection is checked first and wins over every priority.
        (instant("forbidden_special"), "422"),
    ],
)
def test_an_instant_query_gets_cortex_s_priority(url: str, expected: int | str) -> None:
    assert verdict(forwarded("GET", url)) == expected


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        # time_window.start 2h: every sample read must be at or after
        # now-2h less a minute of slack, floored to the minute (WINDOW_EDGE);
        # the first sample a range query reads is start - 5m lookback + 1 ms.
        (WINDOW_EDGE + 299.999, NOW, 3),
        (WINDOW_EDGE + 299.998, NOW, 4),
        (NOW - 30 * HOUR, NOW, 4),
    ],
)
def test_a_range_query_is_judged_on_its_data_select_range(
    start: float, end: float, expected: int
) -> None:
    assert verdict(forwarded("GET", range_piece("up", start, end))) == expected


def test_a_split_range_query_is_judged_piece_by_piece() -> None:
    # DELIBERATE (unavoidable): with -querier.split-queries-by-interval the
    # 1.15.3 frontend enqueues one request per interval
    # (queryrange/split_by_interval.go:76-98) and the scheduler sees only the
    # pieces; newer Cortex decides once, on the whole request, before
    # splitting, and every piece inherits that. So the recent piece of a
    # 30h query can match a window the whole query misses (seen end to end
    # with the real frontend and a 24h split). Splitting also re-prints the
    # PromQL (split_by_interval.go:103-121): regexes see Prometheus' spelling.
    whole = verdict(forwarded("GET", range_piece("up", NOW - 30 * HOUR, NOW)))
    last_hour = verdict(forwarded("GET", range_piece("up", NOW - NOW % HOUR, NOW)))
    assert (whole, last_hour) == (4, 3)


@pytest.mark.parametrize(
    ("window", "time", "matched"),
    [
        (TimeRange(None, 1 * HOUR), NOW - 2 * HOUR, True),  # only end: all data older
        (TimeRange(None, 1 * HOUR), NOW - 0.5 * HOUR, False),
        (TimeRange(2 * HOUR, None), NOW - 0.5 * HOUR, True),  # only start
        (TimeRange(0, 0), NOW, False),  # 0 is unset: an attribute with nothing set
    ],
)
def test_a_time_window_with_one_side_checks_only_that_side(
    window: TimeRange, time: float, matched: bool
) -> None:
    rule = QueryPriority(
        True, 0, [PriorityDef(7, query_attributes=[QueryAttribute(time_window=window)])]
    )
    got = verdict(
        forwarded("GET", instant("x", ("time", go_float(time)))), TenantLimits(query_priority=rule)
    )
    assert got == (7 if matched else 0)


def test_a_disabled_block_gives_priority_zero_whatever_the_default() -> None:
    off = TenantLimits(query_priority=QueryPriority(False, 9, PRIORITY.priorities))
    assert verdict(forwarded("GET", instant("special")), off) == 0


def test_enabled_without_priorities_gives_the_default_priority() -> None:
    # DELIBERATE: newer Cortex sets a priority only when the list is not
    # empty, leaving 0; we apply default_priority, which Cortex's docs
    # describe as the priority of every query that matches none.
    bare = TenantLimits(query_priority=QueryPriority(True, 9, []))
    assert verdict(forwarded("GET", instant("special")), bare) == 9


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        # DELIBERATE: newer Cortex prioritises only query and query_range
        # (metadata calls keep 0); we match them with its metadata matcher.
        (f"{API}/series?{urlencode({'match[]': 'node_load1'})}", 2),
        (f"{API}/labels", 1),
        (f"{API}/label/job/values", 1),
        # Rejection of metadata calls is Cortex's: a regex matches any one
        # `match[]` selector, and /metadata is never rejected.
        (f"{API}/series?{urlencode([('match[]', 'up'), ('match[]', 'forbidden')])}", "422"),
        (f"{API}/metadata?metric={quote('forbidden')}", 1),
    ],
)
def test_non_query_calls(url: str, expected: int | str) -> None:
    assert verdict(forwarded("GET", url)) == expected


@pytest.mark.parametrize(("pad", "expected"), [("", 6), (" ", 0)])
def test_a_metadata_call_s_unreadable_range_matches_no_time_window(pad: str, expected: int) -> None:
    # Series calls are forwarded as they came, and the metadata matcher
    # reads their own start/end with util.ParseTime; one it refuses stays 0,
    # which no time_window passes. " 1700000000" was read as a time here.
    recent = TimeRange(HOUR, None)
    rule = PriorityDef(6, query_attributes=[QueryAttribute(api_type="series", time_window=recent)])
    limits = TenantLimits(query_priority=QueryPriority(True, 0, [rule]))
    params = [("match[]", "up"), ("start", pad + go_float(NOW - 60)), ("end", pad + go_float(NOW))]
    assert verdict(forwarded("GET", f"{API}/series?{urlencode(params)}"), limits) == expected
