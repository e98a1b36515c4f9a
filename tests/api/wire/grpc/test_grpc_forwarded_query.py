"""Reading only the needed headers out of the protobuf changes no parse result."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from api.wire.grpc.admission import forwarded_query
from scheduler_core.cortex_http import parse_forwarded_request
from scheduler_core.pb import httpgrpc_pb2

NAMES = st.sampled_from(
    [
        "User-Agent",
        "user-agent",
        "X-Dashboard-Uid",
        "X-DASHBOARD-UID",
        "X-Panel-Id",
        "Content-Type",
        "content-type",
        "X-Scope-OrgID",
        "Accept-Encoding",
    ]
)
VALUES = st.lists(
    st.sampled_from(
        ["", "grafana/10", "d1", "7", "application/x-www-form-urlencoded", "text/plain"]
    ),
    max_size=3,
)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["GET", "POST"]),
    st.sampled_from(
        [
            "/api/v1/query?query=up",
            "/api/v1/query_range?query=sum%28x%29&start=1&end=2&step=1m",
            "/api/v1/labels",
        ]
    ),
    st.lists(st.tuples(NAMES, VALUES), max_size=8),
    st.sampled_from([b"", b"query=rate%28x%5B5m%5D%29&time=1700000000", b"match%5B%5D=up&start=1"]),
)
def test_forwarded_query_equals_parse_forwarded_request_over_every_header(
    method: str, url: str, headers: list[tuple[str, list[str]]], body: bytes
) -> None:
    http = httpgrpc_pb2.HTTPRequest(
        method=method,
        url=url,
        body=body,
        headers=[httpgrpc_pb2.Header(key=k, values=v) for k, v in headers],
    )
    expected = parse_forwarded_request(
        method, url, [(h.key, list(h.values)) for h in http.headers], body, now=1_700_000_000.0
    )
    assert forwarded_query(http, 1_700_000_000.0) == expected
