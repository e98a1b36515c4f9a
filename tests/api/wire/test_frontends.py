"""The connected-frontends list behind the inspector and /metrics."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from api.wire.frontends import FrontendRow, WebsocketFrontends, frontend_rows
from api.wire.grpc.frontend_loop import FrontendConnection


def consumer(port: int, name: str, pending: int) -> Any:
    return SimpleNamespace(
        scope={"client": ("127.0.0.1", port)},
        token=SimpleNamespace(name=name),
        pending=dict.fromkeys(range(pending)),
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
