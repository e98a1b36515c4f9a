"""The hand-written form decoder gives urllib's parse_qsl result on any input."""

from __future__ import annotations

from urllib.parse import parse_qsl

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.cortex_http import parse_form_pairs, parse_forwarded, parse_forwarded_request

# Separators, escapes (valid, cut short, not hex), UTF-8 lead/continuation
# bytes as escapes, and characters outside ASCII.
PIECES = st.sampled_from(
    [
        "&",
        "=",
        "+",
        "%",
        "%2",
        "%41",
        "%zz",
        "%C3",
        "%A9",
        "%E2%82%AC",
        "%F0%9F",
        "a",
        "q",
        "é",
        "€",
        " ",
        ";",
        "\x00",
    ]
)
ENCODED = st.lists(PIECES | st.text(max_size=4), max_size=30).map("".join)


@settings(max_examples=500, deadline=None)
@given(ENCODED)
def test_parse_form_pairs_matches_urllib_parse_qsl_with_blank_values(encoded: str) -> None:
    assert parse_form_pairs(encoded) == parse_qsl(encoded, keep_blank_values=True)


HEADER_NAMES = st.sampled_from(
    [
        "User-Agent",
        "user-agent",
        "USER-AGENT",
        "X-Dashboard-Uid",
        "x-panel-id",
        "Content-Type",
        "content-type",
        "X-Scope-OrgID",
        "Accept",
    ]
)
HEADERS = st.lists(
    st.tuples(
        HEADER_NAMES,
        st.lists(
            st.sampled_from(["", "grafana", "abc", "application/x-www-form-urlencoded"]), max_size=2
        ),
    ),
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["GET", "POST", "put"]),
    st.sampled_from(["/api/v1/query", "/prometheus/api/v1/query_range", "/api/v1/series", "/x"]),
    ENCODED,
    HEADERS,
    ENCODED,
)
def test_parse_forwarded_with_the_read_headers_matches_the_full_parse(
    method: str, path: str, query: str, headers: list[tuple[str, list[str]]], body: str
) -> None:
    url = f"{path}?{query}"
    found: dict[str, str] = {}
    for key, values in headers:
        if key.lower() not in found and values:
            found[key.lower()] = values[0]
    full = parse_forwarded_request(method, url, headers, body.encode(), now=1_700_000_000.0)
    assert parse_forwarded(method, url, found, body.encode(), now=1_700_000_000.0) == full
