"""The parsed-target cache: the same URL twice is parsed once, and nothing else is shared."""

from __future__ import annotations

from scheduler_core import cortex_http
from scheduler_core.cortex_http import TARGET_CACHE_SIZE, parse_forwarded

URL = "/prometheus/api/v1/query?query=up"


def test_an_instant_query_without_time_is_evaluated_at_each_requests_now() -> None:
    first = parse_forwarded("GET", URL, {}, b"", now=100.0)
    again = parse_forwarded("GET", URL, {}, b"", now=250.0)

    assert (first.start, first.end) == (100.0, 100.0)
    assert (again.start, again.end) == (250.0, 250.0)
    assert again.query == "up"


def test_requests_with_one_url_keep_their_own_headers() -> None:
    grafana = parse_forwarded("GET", URL, {"user-agent": "Grafana/10"}, b"", now=1.0)
    curl = parse_forwarded("GET", URL, {"user-agent": "curl/8"}, b"", now=1.0)

    assert grafana.headers == {"User-Agent": "Grafana/10"}
    assert curl.headers == {"User-Agent": "curl/8"}


def test_a_form_body_is_part_of_what_is_cached() -> None:
    form = {"content-type": "application/x-www-form-urlencoded"}
    path = "/prometheus/api/v1/query_range"
    one = parse_forwarded("POST", path, form, b"query=a&start=1&end=2&step=1", now=9.0)
    two = parse_forwarded("POST", path, form, b"query=b&start=3&end=4&step=2", now=9.0)

    assert (one.query, one.start, one.end, one.step) == ("a", 1.0, 2.0, 1.0)
    assert (two.query, two.start, two.end, two.step) == ("b", 3.0, 4.0, 2.0)


def test_the_cache_stays_bounded_and_never_keeps_a_long_request() -> None:
    for i in range(TARGET_CACHE_SIZE + 50):
        parse_forwarded("GET", f"{URL}&time={i}", {}, b"", now=1.0)
    long_query = "/prometheus/api/v1/query?query=" + "x" * 5000
    parsed = parse_forwarded("GET", long_query, {}, b"", now=1.0)

    assert len(cortex_http._targets) <= TARGET_CACHE_SIZE
    assert parsed.query == "x" * 5000
    assert not any(key[1] == long_query for key in cortex_http._targets)
