"""A send that finds the client already gone takes the quiet disconnect path.

The client's close can cross our frame on the wire: the send then raises
(Daphne: autobahn's `Disconnected`) before the `websocket.disconnect`
saying so is handled. That is no failure of ours: the same cleanup as a
disconnect runs, nothing is lost, and nothing is logged at ERROR (before,
each such race wrote a traceback, so any client could fill the error log).
Here a wrapper makes the application's `send` raise once the client has
"gone", as Daphne's does.
"""

from __future__ import annotations

import gc
import logging
from typing import Any

import pytest
from autobahn.exception import Disconnected
from channels.testing import WebsocketCommunicator

from api.store.services import api_token_issue
from config.asgi import application
from tests.api.wire.test_consumers_faults import querier_ids
from tests.api.wire.test_consumers_ws import enqueue

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def tokens(transactional_db: None) -> dict[str, str]:
    return {role: api_token_issue(name=role, role=role)[1] for role in ("frontend", "querier")}


class Socket:
    """One connection whose server-side sends raise once `gone` is set."""

    def __init__(self, path: str, token: str) -> None:
        self.gone = False
        self.comm = WebsocketCommunicator(
            self._app, path, headers=[(b"authorization", f"Bearer {token}".encode())]
        )

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        async def closing_send(message: dict[str, Any]) -> None:
            if self.gone and message["type"] == "websocket.send":
                raise Disconnected("Attempt to send on a closed protocol")
            await send(message)

        await application(scope, receive, closing_send)

    async def open(self) -> Socket:
        connected, _ = await self.comm.connect(timeout=5)
        assert connected
        return self


async def querier(token: str, querier_id: str) -> Socket:
    q = await Socket("/ws/querier/", token).open()
    await q.comm.send_json_to({"type": "hello", "querier_id": querier_id, "workers": 1})
    assert (await q.comm.receive_json_from(timeout=5))["type"] == "welcome"
    return q


def errors_logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    gc.collect()  # an exception no one retrieved is logged when its task is collected
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_request_sent_to_a_querier_that_just_closed_goes_back_quietly(
    host: Any, tokens: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    q = await querier(tokens["querier"], "q-gone")
    q.gone = True
    f = await Socket("/ws/frontend/", tokens["frontend"]).open()
    await f.comm.send_json_to(enqueue("r"))
    assert (await f.comm.receive_json_from(timeout=5))["type"] == "enqueued"
    await q.comm.wait(5)  # the consumer ended: it took the disconnect path
    assert querier_ids(host) == []
    assert len(host.runtime.queue) == 1  # back at the front, for another querier
    again = await querier(tokens["querier"], "q-next")
    retried = await again.comm.receive_json_from(timeout=5)
    assert (retried["type"], retried["tenant"]) == ("request", "t1")
    assert errors_logged(caplog) == []
    await again.comm.disconnect()
    await f.comm.disconnect()


async def test_a_result_for_a_frontend_that_just_closed_completes_quietly(
    host: Any, tokens: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    q = await querier(tokens["querier"], "q-1")
    f = await Socket("/ws/frontend/", tokens["frontend"]).open()
    await f.comm.send_json_to(enqueue("r"))
    assert (await f.comm.receive_json_from(timeout=5))["type"] == "enqueued"
    request = await q.comm.receive_json_from(timeout=5)
    f.gone = True
    await q.comm.send_json_to(
        {"type": "result", "worker": request["worker"], "id": request["id"], "status": 200}
    )
    await q.comm.send_json_to({"type": "hello", "querier_id": "q-1", "workers": 1})
    await q.comm.receive_json_from(timeout=5)  # the result was handled before this
    assert len(host.runtime.queue) == 0 and host.runtime.queue.in_flight_count() == 0
    assert querier_ids(host) == ["q-1"]  # the querier is not blamed
    assert errors_logged(caplog) == []
    await q.comm.disconnect()
    await f.comm.disconnect()


async def test_an_answer_to_a_frontend_that_just_closed_cancels_its_requests_quietly(
    host: Any, tokens: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    f = await Socket("/ws/frontend/", tokens["frontend"]).open()
    await f.comm.send_json_to(enqueue("first", tenant="leaving"))
    assert (await f.comm.receive_json_from(timeout=5))["type"] == "enqueued"
    f.gone = True
    await f.comm.send_json_to(enqueue("second", tenant="leaving"))
    await f.comm.receive_output(timeout=5)  # the close that follows the cleanup
    assert host.runtime.queue.tenant_length("leaving") == 0
    assert len(host.websocket_frontends) == 0
    assert errors_logged(caplog) == []


async def test_a_failed_reply_for_a_frontend_that_just_closed_is_dropped_quietly(
    host: Any, tokens: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    f = await Socket("/ws/frontend/", tokens["frontend"]).open()
    await f.comm.send_json_to(enqueue("r"))
    assert (await f.comm.receive_json_from(timeout=5))["type"] == "enqueued"
    f.gone = True
    for name in ("q-1", "q-2"):  # a request whose querier leaves twice fails back
        q = await querier(tokens["querier"], name)
        assert (await q.comm.receive_json_from(timeout=5))["type"] == "request"
        await q.comm.disconnect()
    assert len(host.runtime.queue) == 0 and host.runtime.queue.in_flight_count() == 0
    await f.comm.disconnect()
    assert errors_logged(caplog) == []


@pytest.mark.parametrize("path", ["/ws/relay/frontend/", "/ws/nowhere/", "/ws/frontend/x/"])
async def test_a_websocket_path_nobody_serves_is_refused_without_a_traceback(
    host: Any, tokens: dict[str, str], caplog: pytest.LogCaptureFixture, path: str
) -> None:
    # Both doors: machine paths by token, browser paths from an allowed origin.
    headers = [
        (b"authorization", f"Bearer {tokens['frontend']}".encode()),
        (b"origin", b"http://127.0.0.1"),
    ]
    comm = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await comm.connect(timeout=5)
    assert not connected
    assert errors_logged(caplog) == []
