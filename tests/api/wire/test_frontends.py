"""The connected-frontends list behind the inspector and /metrics."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from api.wire.frontends import (
    MAX_FRONTEND_NAME,
    FrontendRow,
    WebsocketFrontends,
    frontend_name,
    frontend_rows,
)
from api.wire.grpc.frontend_loop import FrontendConnection
from api.wire.protocol import ProtocolError


def consumer(port: int, name: str, pending: int, frontend: str | None = None) -> Any:
    return SimpleNamespace(
        scope={"client": ("127.0.0.1", port)},
        token=SimpleNamespace(name=name),
        pending=dict.fromkeys(range(pending)),
        frontend_name=frontend,
    )


def test_websocket_and_grpc_frontends_are_listed_alike_until_they_leave() -> None:
    websocket = WebsocketFrontends()
    grafana, loadgen = consumer(5000, "grafana", 2), consumer(5001, "loadgen", 0)
    websocket.opened(grafana)
    websocket.opened(loadgen)
    connection = FrontendConnection("10.0.0.7:9095", 3, 5, "frontend-eu", 12.5)
    door = SimpleNamespace(frontend_connections=lambda: [connection])

    rows = frontend_rows(websocket, door)

    assert [row._replace(connected_for=None) for row in rows] == [
        FrontendRow("websocket", "127.0.0.1:5000", "grafana", 1, 2, None),
        FrontendRow("websocket", "127.0.0.1:5001", "loadgen", 1, 0, None),
        FrontendRow("grpc", "10.0.0.7:9095", "frontend-eu", 3, 5, None),
    ]
    assert rows[2].connected_for == 12.5
    assert all(row.connected_for is not None for row in rows[:2])
    websocket.closed(grafana)
    assert [row.name for row in frontend_rows(websocket, None)] == ["loadgen"]


def test_a_named_frontends_sockets_are_one_row_with_a_stream_each() -> None:
    websocket = WebsocketFrontends()
    first, second = consumer(5000, "edge", 2, "edge-1"), consumer(5001, "edge", 3, "edge-1")
    anonymous = consumer(5002, "grafana", 1)
    for socket in (first, anonymous, second):
        websocket.opened(socket)

    rows = [row._replace(connected_for=None) for row in websocket.rows()]

    assert rows == [
        FrontendRow("websocket", "edge-1", "edge", 2, 5, None),
        FrontendRow("websocket", "127.0.0.1:5002", "grafana", 1, 1, None),
    ]
    assert websocket.names() == {"edge-1"}
    websocket.closed(first)
    left = {row.address: (row.streams, row.outstanding) for row in websocket.rows()}
    assert left == {"127.0.0.1:5002": (1, 1), "edge-1": (1, 3)}
    websocket.closed(second)
    assert websocket.names() == set()


def scope(query: bytes) -> dict[str, Any]:
    return {"query_string": query}


def test_a_frontend_name_is_read_from_the_query_string_beside_the_token() -> None:
    assert frontend_name(scope(b"token=qi_x&frontend=edge-1%3A9095")) == "edge-1:9095"
    assert frontend_name(scope(b"token=qi_x")) is None
    assert frontend_name({}) is None


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        (b"frontend=", "must not be empty"),
        (b"frontend=a&frontend=b", "given more than once"),
        (b"frontend=" + b"x" * (MAX_FRONTEND_NAME + 1), f"at most {MAX_FRONTEND_NAME}"),
        (b"frontend=two+words", "printable ASCII without spaces"),
        (b"frontend=%C3%A9t%C3%A9", "printable ASCII without spaces"),
        (b"frontend=tab%09", "printable ASCII without spaces"),
    ],
)
def test_a_bad_frontend_name_is_refused_naming_the_field(query: bytes, problem: str) -> None:
    with pytest.raises(ProtocolError) as refused:
        frontend_name(scope(query))
    assert refused.value.field == "frontend"
    assert problem in refused.value.message


def test_a_name_shared_by_sockets_of_two_tokens_lists_both_tokens() -> None:
    websocket = WebsocketFrontends()
    for port, token in ((5000, "edge-b"), (5001, "edge-a"), (5002, "edge-b")):
        websocket.opened(consumer(port, token, 0, "edge-1"))

    (row,) = websocket.rows()

    assert (row.address, row.name, row.streams) == ("edge-1", "edge-a, edge-b", 3)
