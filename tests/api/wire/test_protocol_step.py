"""A step reads alike through both doors: the websocket enqueue and the gRPC door.

Cortex's query-frontend reads a step with `parseDurationMs`: the float of
seconds times 1000, truncated to whole milliseconds by Go's int64(). The
gRPC door reads the forwarded `step` parameter so; the websocket's JSON
number must give the same step, or a `query_step_limit` bound would match a
request differently depending on the door it came through.
"""

from __future__ import annotations

import json

import pytest

from api.wire.protocol import FRONTEND_PARSERS, Enqueue, ProtocolError, parse
from scheduler_core.cortex_http import parse_forwarded_request
from scheduler_core.model import PriorityDef, QueryAttribute, QueryInfo, QueryPriority, TimeRange

NOW = 1_700_000_000.0


def _websocket_step(text: str) -> float | None:
    data = json.loads(
        f'{{"type": "enqueue", "id": 1, "tenant": "t", "query": "up", "step": {text}}}'
    )
    message = parse(data, FRONTEND_PARSERS)
    assert isinstance(message, Enqueue)
    return message.step


def _grpc_step(text: str) -> float | None:
    url = f"/prometheus/api/v1/query_range?query=up&start=0&end=100&step={text}"
    return parse_forwarded_request("GET", url, [], b"", now=NOW).step


# What Cortex v1.15.3's parseDurationMs gives, in milliseconds, for each text
# (Go's float64 product, truncated: 1.001 * 1000 is 1000.999... there too).
CORTEX_MS = {
    "15": 15_000,
    "0.5": 500,
    "0.9996": 999,
    "1.0005": 1000,
    "1.0009": 1000,
    "1.001": 1000,
    "1.002": 1002,
    "0.0015": 1,
    "2.5e-3": 2,
    "60.0000001": 60_000,
}


@pytest.mark.parametrize(("text", "ms"), CORTEX_MS.items())
def test_both_doors_read_a_step_as_cortex_does_to_the_millisecond(text: str, ms: int) -> None:
    assert _websocket_step(text) == _grpc_step(text) == ms / 1000


@pytest.mark.parametrize("text", ["0.9996", "1.0005", "1.0009", "1"])
def test_a_step_limit_matches_a_step_alike_through_both_doors(text: str) -> None:
    rule = PriorityDef(5, 0, [QueryAttribute(query_step_limit=TimeRange(1.0, 1.0))])
    config = QueryPriority(True, 0, [rule])
    priorities = {
        config.priority_for(QueryInfo(api_type="query_range", step=step), NOW)
        for step in (_websocket_step(text), _grpc_step(text))
    }
    # 0.9996 s was 1000 ms to the websocket (rounded) and 999 ms to the gRPC door.
    assert priorities == {0 if text == "0.9996" else 5}


@pytest.mark.parametrize("text", ["0.0005", "0.0009999", "1e-9"])
def test_a_websocket_step_under_a_millisecond_is_refused_naming_step(text: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        _websocket_step(text)
    assert caught.value.field == "step"
    assert "Cortex reads a step to the millisecond" in caught.value.message
    # The gRPC door reads it as the 0 Cortex's frontend refuses (errNegativeStep);
    # the querier answers it, as every value Prometheus refuses there.
    assert _grpc_step(text) == 0.0
