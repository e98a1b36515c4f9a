"""Reading api type, query, times, step and headers from forwarded requests."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from scheduler_core.cortex_http import (
    api_type_of_path,
    component_hint,
    parse_duration_seconds,
    parse_forwarded_request,
    parse_prometheus_time,
)

NOW = 1_700_000_000.0
FORM = [("Content-Type", ["application/x-www-form-urlencoded"])]


@pytest.mark.parametrize(
    ("path", "api_type"),
    [
        ("/prometheus/api/v1/query", "query"),
        ("/api/prom/api/v1/query_range", "query_range"),
        ("/prometheus/api/v1/series", "series"),
        ("/prometheus/api/v1/labels", "labels"),
        ("/prometheus/api/v1/label/job/values", "label_values"),
        ("/prometheus/api/v1/metadata", "metadata"),
        ("/prometheus/api/v1/query_exemplars", "other"),
        ("/prometheus/api/v1/query_range/", "query_range"),
        ("", "other"),
    ],
)
def test_api_type_is_the_last_path_element(path: str, api_type: str) -> None:
    assert api_type_of_path(path) == api_type


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [
        ("1700000000", 1_700_000_000.0),
        ("1700000000.5", 1_700_000_000.5),
        ("2023-11-14T22:13:20Z", 1_700_000_000.0),
        ("2023-11-14T22:13:20.123456789Z", 1_700_000_000.123456),
        ("2023-11-15T00:13:20+02:00", 1_700_000_000.0),
    ],
)
def test_prometheus_times_are_unix_seconds_or_rfc3339(raw: str, seconds: float) -> None:
    assert parse_prometheus_time(raw) == pytest.approx(seconds)


@pytest.mark.parametrize("raw", ["", "yesterday", "nan", "inf", "2023-11-14T22:13:20", "9" * 80])
def test_unreadable_times_become_none(raw: str) -> None:
    assert parse_prometheus_time(raw) is None


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [("15", 15.0), ("0.5", 0.5), ("15s", 15.0), ("1m30s", 90.0), ("500ms", 0.5), ("1h", 3600.0)]
    + [("2d", 172_800.0), ("1w", 604_800.0), ("1y", 31_536_000.0)],
)
def test_steps_are_seconds_or_prometheus_durations(raw: str, seconds: float) -> None:
    assert parse_duration_seconds(raw) == pytest.approx(seconds)


@pytest.mark.parametrize("raw", ["", "s", "15x", "-5", "1s1m", "inf"])
def test_unreadable_steps_become_none(raw: str) -> None:
    assert parse_duration_seconds(raw) is None


def test_range_query_reads_query_start_end_and_step_from_the_query_string() -> None:
    params = urlencode({"query": 'sum(rate(x{job="a"}[5m]))', "start": "100", "end": "200"})
    url = f"/prometheus/api/v1/query_range?{params}&step=15s"

    parsed = parse_forwarded_request("GET", url, [], b"", now=NOW)

    assert parsed.api_type == "query_range"
    assert parsed.query == 'sum(rate(x{job="a"}[5m]))'
    assert (parsed.start, parsed.end, parsed.step) == (100.0, 200.0, 15.0)


@pytest.mark.parametrize("prefix", ["//[::1", "http://[bad", "//ex\uff03ample"])
def test_a_url_urlsplit_refuses_is_read_from_its_path_and_query_string(prefix: str) -> None:
    url = f"{prefix}/prometheus/api/v1/query_range?query=up&start=100&end=200&step=15#x"

    parsed = parse_forwarded_request("GET", url, [], b"", now=NOW)

    assert (parsed.api_type, parsed.query) == ("query_range", "up")
    assert (parsed.start, parsed.end, parsed.step) == (100.0, 200.0, 15.0)


def test_post_reads_the_form_encoded_body_before_the_query_string() -> None:
    body = urlencode({"query": "up", "start": "10", "end": "20", "step": "5"}).encode()

    parsed = parse_forwarded_request(
        "POST", "/prometheus/api/v1/query_range?start=1", FORM, body, now=NOW
    )

    assert (parsed.query, parsed.start, parsed.end, parsed.step) == ("up", 10.0, 20.0, 5.0)


def test_post_body_of_another_content_type_is_not_read_as_a_form() -> None:
    headers = [("content-type", ["application/json"])]

    parsed = parse_forwarded_request(
        "POST", "/prometheus/api/v1/query?query=up", headers, b"query=down", now=NOW
    )

    assert parsed.query == "up"


def test_instant_query_uses_its_time_for_start_and_end() -> None:
    parsed = parse_forwarded_request(
        "GET", "/api/v1/query?query=up&time=2023-11-14T22:13:20Z", [], b"", now=NOW + 99
    )

    assert (parsed.start, parsed.end, parsed.step) == (NOW, NOW, None)


def test_instant_query_without_time_is_evaluated_now() -> None:
    parsed = parse_forwarded_request("GET", "/api/v1/query?query=up", [], b"", now=NOW)

    assert (parsed.start, parsed.end) == (NOW, NOW)


def test_series_and_labels_join_their_match_selectors_as_the_query() -> None:
    url = "/api/v1/series?" + urlencode(
        [("match[]", 'up{job="a"}'), ("match[]", "process_start_time_seconds"), ("start", "5")]
    )

    parsed = parse_forwarded_request("GET", url, [], b"", now=NOW)

    assert parsed.api_type == "series"
    assert parsed.query == 'up{job="a"},process_start_time_seconds'
    assert (parsed.start, parsed.end) == (5.0, None)


def test_label_values_read_match_selectors_from_a_post_body() -> None:
    body = urlencode([("match[]", "up"), ("end", "7")]).encode()

    parsed = parse_forwarded_request("POST", "/api/v1/label/job/values", FORM, body, now=NOW)

    assert (parsed.api_type, parsed.query, parsed.end) == ("label_values", "up", 7.0)


def test_bad_values_are_left_unset_rather_than_rejected() -> None:
    url = "/api/v1/query_range?query=up&start=soon&end=later&step=often"

    parsed = parse_forwarded_request("GET", url, [], b"", now=NOW)

    assert (parsed.start, parsed.end, parsed.step) == (None, None, None)


def test_priority_headers_are_found_case_insensitively_under_canonical_names() -> None:
    headers = [
        ("user-agent", ["Grafana/10.2"]),
        ("X-DASHBOARD-UID", ["dash-1", "ignored"]),
        ("x-panel-id", ["7"]),
        ("X-Scope-OrgID", ["tenant-a"]),
        ("X-Panel-Id", ["second occurrence"]),
    ]

    parsed = parse_forwarded_request("GET", "/api/v1/query?query=up", headers, b"", now=NOW)

    assert parsed.headers == {
        "User-Agent": "Grafana/10.2",
        "X-Dashboard-Uid": "dash-1",
        "X-Panel-Id": "7",
    }


def test_undecodable_body_bytes_do_not_raise() -> None:
    parsed = parse_forwarded_request(
        "POST", "/api/v1/query", FORM, b"query=\xff\xfe&time=3", now=NOW
    )

    assert (parsed.query, parsed.start) == ("\ufffd\ufffd", 3.0)


@pytest.mark.parametrize(
    ("dimensions", "component"),
    [
        (["ingester"], "ingester"),
        (["store-gateway"], "store-gateway"),
        (["ingester-and-store-gateway"], "ingester-and-store-gateway"),
        ([], None),
        (["unknown"], None),
        (["something-else"], None),
    ],
)
def test_mimir_component_hint_is_taken_only_when_it_names_a_component(
    dimensions: list[str], component: str | None
) -> None:
    assert component_hint(dimensions) == component
