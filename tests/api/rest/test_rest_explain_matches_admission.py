"""Explain answers what admission does: the same request through `explain/` and the gRPC door."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.store.models import Tenant
from api.wire.grpc.admission import Admission, QueryRejected
from api.wire.grpc.clients import get_request
from scheduler_core.model import QueueConfig, TenantLimits
from scheduler_core.pb import schedulerpb_pb2 as pb
from scheduler_core.validation import tenant_limits_from_dict

NOW = 1_700_000_040.0  # 22:14:00Z: a minute boundary, where time windows turn
URL = "/api/v1/explain/"
_REGEXES = ["^sum", "errors$", "(?i)ERRORS", "é", ".*", ".+", "^up$", "rate\\(", "[", None]


class Host:
    def __init__(self, limits: dict[str, TenantLimits]) -> None:
        self.limits, self.config = limits, QueueConfig()

    def tenant_limits(self, tenant_id: str) -> TenantLimits:
        return self.limits.get(tenant_id, TenantLimits())


# (low, high) durations, low <= high, where boundaries fall on the requests below.
_PAIRS = [None, ("5m", None), (None, "1h"), ("59s", "1h1m"), ("1h", "13h"), ("1h1m", None)]


@st.composite
def _attribute(draw: Any) -> dict[str, Any]:
    attr: dict[str, Any] = {}
    for key, values in [
        ("regex", [r for r in _REGEXES if r != "["]),
        ("api_type", [None, "query", "query_range", "series", "labels"]),
        ("user_agent_regex", [None, "^Grafana", "(?i)^grafana/1[01]"]),
        ("dashboard_uid", [None, "oncall"]),
        ("panel_id", [None, "2"]),
    ]:
        value = draw(st.sampled_from(values))
        if value is not None:
            attr[key] = value
    for key, (low, high) in {
        "time_window": ("start", "end"),
        "time_range_limit": ("min", "max"),
        "query_step_limit": ("min", "max"),
    }.items():
        pair = draw(st.sampled_from(_PAIRS))
        if pair:
            # A time window's start is the longer ago of the two.
            first, second = pair[::-1] if key == "time_window" else pair
            attr[key] = {side: v for side, v in ((low, first), (high, second)) if v}
    return attr or {"regex": "up"}


@st.composite
def _block(draw: Any) -> dict[str, Any]:
    levels = draw(st.lists(st.integers(1, 9), max_size=3, unique=True))
    return {
        "query_priority": {
            "enabled": draw(st.booleans()),
            "default_priority": draw(st.integers(0, 2)),
            "priorities": [
                {
                    "priority": p,
                    "query_attributes": draw(st.lists(_attribute(), min_size=1, max_size=2)),
                }
                for p in levels
            ],
        },
        "query_rejection": {
            "enabled": draw(st.booleans()),
            "query_attributes": draw(st.lists(_attribute(), max_size=1)),
        },
    }


_TIMES = [NOW - d for d in (0, 0.001, 60, 299.999, 300, 3600, 3660, 3659.999, 3720, 46800, 86400)]


@st.composite
def _request(draw: Any) -> dict[str, Any]:
    api_type = draw(st.sampled_from(["query", "query_range", "series", "labels"]))
    end = draw(st.sampled_from(_TIMES))
    start = end - draw(st.sampled_from([0, 300, 3600, 3600.001, 86400]))
    query = draw(
        st.sampled_from(
            ["up", "sum(rate(errors_total[5m]))", "max_over_time(up[1h:1m])", 'up{l="é"}', "ERRORS"]
        )
    )
    headers = draw(
        st.sampled_from(
            [
                {},
                {"user-agent": "Grafana/11.0", "X-Dashboard-UID": "oncall", "x-panel-id": "2"},
                {"User-Agent": "grafana/10", "X-Dashboard-Uid": "oncall"},
            ]
        )
    )
    return {
        "tenant": draw(st.sampled_from(["a", "b", "a|b"])),
        "query": query,
        "api_type": api_type,
        "start": start,
        "end": end,
        "step": draw(st.sampled_from(["15", "1m", "59s", "61"])),
        "headers": headers,
    }


def _door(host: Host, request: dict[str, Any]) -> dict[str, Any]:
    api = request["api_type"]
    if api == "query":
        path, params = (
            "/api/v1/query",
            [("query", request["query"]), ("time", str(request["start"]))],
        )
    else:
        path = f"/api/v1/{api}"
        params = [("start", str(request["start"])), ("end", str(request["end"]))]
        if api == "query_range":
            params += [("query", request["query"]), ("step", request["step"])]
        else:
            params += [("match[]", request["query"])]
    msg = pb.FrontendToScheduler(
        type=pb.ENQUEUE,
        queryID=1,
        userID=request["tenant"],
        httpRequest=get_request(path, params, request["headers"]),
    )
    try:
        built = Admission(host, wall_clock=lambda: NOW).build(msg, "fe:1")
    except QueryRejected as exc:
        return {"rejected": str(exc)}
    rule = built.priority_rule
    return {
        "priority": built.priority,
        "rule": None if rule is None else list(rule),
        "source": built.priority_source,
        "component": built.component,
    }


def _explained(client: Any, request: dict[str, Any]) -> dict[str, Any]:
    body = {**request, "now": NOW, "start": str(request["start"]), "end": str(request["end"])}
    if request["api_type"] != "query_range":
        body["step"] = None
    if request["api_type"] == "query":
        body["end"] = None
    response = client.post(URL, body, format="json")
    assert response.status_code == 200, response.content
    got = response.json()
    if got["rejected_by"] is not None:
        return {"rejected": got["rejected_by"]}
    rule = None if got["rule_index"] is None else [got["rule_index"], got["attribute_index"]]
    return {
        "priority": got["priority"],
        "rule": rule,
        "source": got["source"],
        "component": got["component"],
    }


@pytest.mark.django_db
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(_block(), _block(), st.lists(_request(), min_size=1, max_size=8))
def test_explain_gives_each_request_what_the_grpc_door_gives_it(
    editor_api: Any, a: dict[str, Any], b: dict[str, Any], requests: list[dict[str, Any]]
) -> None:
    for tenant, block in (("a", a), ("b", b)):
        Tenant.objects.update_or_create(tenant_id=tenant, defaults={"config": block})
    host = Host({"a": tenant_limits_from_dict(a), "b": tenant_limits_from_dict(b)})
    for request in requests:
        door, explained = _door(host, request), _explained(editor_api, request)
        if "rejected" in door:
            assert f"query_attributes[{explained.get('rejected')}]" in door["rejected"], request
        else:
            assert explained == door, request
