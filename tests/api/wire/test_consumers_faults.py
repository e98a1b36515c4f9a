"""Hostile frames and failures inside the machine consumers never leave a ghost.

Malformed input of any shape gets an `error` and the socket stays usable;
an exception that escapes message handling (a bug, simulated here by making
a function raise) runs the disconnect cleanup at once: the querier leaves
the runtime and its in-flight request goes back to the queue, the
frontend's queued requests are cancelled, and the socket closes with 4500.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import channels.consumer as consumer_module
import pytest
from channels.testing import WebsocketCommunicator

from api.store.services import api_token_issue
from api.wire import runtime_host
from api.wire.consumers import base, frontend, querier
from api.wire.consumers.guard import CLOSE_INTERNAL_ERROR, CLOSE_SHUTDOWN, OPEN_SOCKETS, close_all
from api.wire.protocol import MAX_JSON_DEPTH
from config.asgi import application
from tests.api.wire.test_consumers_ws import enqueue

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def tokens(transactional_db: None) -> dict[str, str]:
    return {role: api_token_issue(name=role, role=role)[1] for role in ("frontend", "querier")}


async def connect(path: str, token: str) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(
        application, path, headers=[(b"authorization", f"Bearer {token}".encode())]
    )
    connected, _ = await comm.connect(timeout=5)
    assert connected
    return comm


async def start_querier(token: str, querier_id: str = "q-1") -> WebsocketCommunicator:
    comm = await connect("/ws/querier/", token)
    await comm.send_json_to({"type": "hello", "querier_id": querier_id, "workers": 4})
    assert (await comm.receive_json_from(timeout=5))["type"] == "welcome"
    return comm


def querier_ids(host: runtime_host.RuntimeHost) -> list[str]:
    return [q.querier_id for q in host.runtime.snapshot().queriers if q.connected]


async def closed_with(comm: WebsocketCommunicator) -> int:
    """The close code after the failure's `error` frame."""
    frame = json.loads((await comm.receive_output(timeout=5))["text"])
    assert (frame["type"], frame["status"]) == ("error", 500)
    output = await comm.receive_output(timeout=5)
    assert output["type"] == "websocket.close"
    return int(output["code"])


DEEP = "[" * 1_000 + "]" * 1_000
HOSTILE = [
    DEEP,
    '{"type":"enqueue","id":1,"tenant":"t","headers":' + '{"a":' * 5_000 + "1" + "}" * 5_001,
    '{"type":"enqueue","id":2,"tenant":"t","start":' + "9" * 400 + "}",
    '{"type":"enqueue","id":3,"tenant":"t","step":' + "9" * 400 + "}",
    '{"type":"enqueue","id":4,"tenant":"t","start":1e308,"end":1e309}',
    '{"type":"enqueue","id":5,"tenant":"t","start":-1e308}',
    '{"type":"enqueue","id":6,"tenant":"t","step":1e300}',
    '{"type":["enqueue"]}',
    '{"type":"enqueue","id":[1],"tenant":"t"}',
    '{"type":"enqueue","id":7,"tenant":"' + "t" * 151 + '"}',
    '{"type":"enqueue","id":8,"tenant":{"a":1}}',
    '{"type":"enqueue","id":9,"tenant":"t","component":["x"]}',
    '{"type":"enqueue","id":10,"tenant":"t","api_type":{"a":[]}}',
    '{"type":"hello","querier_id":"q","workers":' + "9" * 400 + "}",
    '{"type":"result","worker":' + "9" * 400 + ',"id":"x"}',
    "[]",
    "null",
    '"\\ud800"',
    "{" * 100_000,
]


@pytest.mark.parametrize("path", ["/ws/frontend/", "/ws/querier/"])
async def test_every_hostile_frame_gets_an_error_and_the_socket_stays_usable(
    host: Any, tokens: dict[str, str], path: str
) -> None:
    token = tokens["frontend" if "frontend" in path else "querier"]
    comm = await connect(path, token)
    for frame in HOSTILE:
        await comm.send_to(text_data=frame)
        reply = await comm.receive_json_from(timeout=5)
        assert (reply["type"], reply["status"]) == ("error", 400), (frame[:60], reply)
    await comm.send_to(bytes_data=b"\x00\xff")
    assert (await comm.receive_json_from(timeout=5))["status"] == 400
    if "frontend" in path:
        await comm.send_json_to(enqueue("after", tenant="hostile"))
        assert (await comm.receive_json_from(timeout=5))["type"] == "enqueued"
    else:
        await comm.send_json_to({"type": "hello", "querier_id": "q-hostile", "workers": 4})
        assert (await comm.receive_json_from(timeout=5))["type"] == "welcome"
    await comm.disconnect()


async def test_a_frame_nested_too_deep_names_the_limit(host: Any, tokens: dict[str, str]) -> None:
    comm = await connect("/ws/frontend/", tokens["frontend"])
    await comm.send_to(text_data=DEEP)
    reply = await comm.receive_json_from(timeout=5)
    assert f"the limit is {MAX_JSON_DEPTH}" in reply["error"]
    await comm.disconnect()


async def test_a_querier_whose_frame_raises_leaves_and_its_request_goes_back(
    host: Any, tokens: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    f = await connect("/ws/frontend/", tokens["frontend"])
    q = await start_querier(tokens["querier"])
    await f.send_json_to(enqueue("r"))
    await f.receive_json_from(timeout=5)
    assert (await q.receive_json_from(timeout=5))["type"] == "request"
    assert querier_ids(host) == ["q-1"]

    def broken(text: str | None) -> Any:
        raise RuntimeError("a bug in decoding")

    monkeypatch.setattr(base, "decode", broken)
    await q.send_to(text_data='{"type":"shutdown"}')
    assert await closed_with(q) == CLOSE_INTERNAL_ERROR
    assert querier_ids(host) == []
    assert len(host.runtime.queue) == 1  # back at the front, for another querier
    assert q not in OPEN_SOCKETS
    monkeypatch.undo()
    again = await start_querier(tokens["querier"], "q-2")
    retried = await again.receive_json_from(timeout=5)
    assert (retried["type"], retried["tenant"]) == ("request", "t1")
    await again.disconnect()
    await f.disconnect()


async def test_a_result_read_together_with_the_close_is_delivered_not_run_again(
    host: Any, tokens: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both frames in one read: the close is handled before the worker task
    resumes with the result (nothing in between yields to it)."""

    async def no_hop() -> None:
        return None  # Channels' per-handler housekeeping would yield once

    monkeypatch.setattr(consumer_module, "aclose_old_connections", no_hop)
    f = await connect("/ws/frontend/", tokens["frontend"])
    q = await start_querier(tokens["querier"])
    await f.send_json_to(enqueue("r"))
    await f.receive_json_from(timeout=5)
    request = await q.receive_json_from(timeout=5)
    result = {"type": "result", "worker": request["worker"], "id": request["id"], "status": 200}
    q.input_queue.put_nowait({"type": "websocket.receive", "text": json.dumps(result)})
    q.input_queue.put_nowait({"type": "websocket.disconnect", "code": 1000})
    await q.wait(5)

    answer = await f.receive_json_from(timeout=5)
    assert (answer["type"], answer["id"], answer["status"]) == ("result", "r", 200)
    assert len(host.runtime.queue) == 0 and host.runtime.queue.in_flight_count() == 0
    assert querier_ids(host) == []
    await f.disconnect()


async def test_a_frontend_whose_frame_raises_has_its_queued_requests_cancelled(
    host: Any, tokens: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    f = await connect("/ws/frontend/", tokens["frontend"])
    for rid in range(3):
        await f.send_json_to(enqueue(rid, tenant="ghostly"))
        assert (await f.receive_json_from(timeout=5))["type"] == "enqueued"
    assert host.runtime.queue.tenant_length("ghostly") == 3
    assert len(host.websocket_frontends) == 1

    def broken(data: Any, parsers: Any) -> Any:
        raise RuntimeError("a bug in parsing")

    monkeypatch.setattr(base, "parse", broken)
    await f.send_json_to(enqueue("boom", tenant="ghostly"))
    assert await closed_with(f) == CLOSE_INTERNAL_ERROR
    assert host.runtime.queue.tenant_length("ghostly") == 0
    assert len(host.websocket_frontends) == 0
    # What is sent on the closing socket is ignored, never handled.
    await f.send_json_to(enqueue("late", tenant="ghostly"))
    assert await f.receive_nothing(timeout=0.1)
    assert host.runtime.queue.tenant_length("ghostly") == 0


async def test_a_handler_failure_answers_500_naming_the_request(
    host: Any, tokens: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any) -> Any:
        raise OverflowError("a bug in classification")

    monkeypatch.setattr(frontend, "judge_enqueue", broken)
    f = await connect("/ws/frontend/", tokens["frontend"])
    await f.send_json_to(enqueue("r-9"))
    reply = await f.receive_json_from(timeout=5)
    assert (reply["type"], reply["id"], reply["status"]) == ("error", "r-9", 500)
    monkeypatch.undo()
    await f.send_json_to(enqueue("r-10"))  # the socket is still usable
    assert (await f.receive_json_from(timeout=5))["type"] == "enqueued"
    await f.disconnect()


async def test_a_worker_that_dies_takes_its_querier_down_the_disconnect_path(
    host: Any, tokens: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(request: Any, worker_id: int) -> Any:
        raise RuntimeError("a bug in a worker")

    monkeypatch.setattr(querier, "request_message", broken)
    q = await start_querier(tokens["querier"])
    f = await connect("/ws/frontend/", tokens["frontend"])
    await f.send_json_to(enqueue("r"))
    await f.receive_json_from(timeout=5)
    assert await closed_with(q) == CLOSE_INTERNAL_ERROR
    assert querier_ids(host) == []
    assert len(host.runtime.queue) == 1 and host.runtime.queue.in_flight_count() == 0
    await f.disconnect()


async def test_a_shutdown_fails_work_back_then_closes_every_socket_with_a_close_frame(
    host: Any, tokens: dict[str, str]
) -> None:
    f = await connect("/ws/frontend/", tokens["frontend"])
    q = await start_querier(tokens["querier"])
    await f.send_json_to(enqueue("running"))
    await f.send_json_to(enqueue("queued", tenant="t1", query="x"))
    await f.receive_json_from(timeout=5)
    await f.receive_json_from(timeout=5)
    # One worker takes "running"; the others take "queued" too: hold them all.
    requests = [await q.receive_json_from(timeout=5) for _ in range(2)]
    assert {r["type"] for r in requests} == {"request"}
    await f.send_json_to(enqueue("waiting", tenant="t2"))
    # Four workers, two busy: the third request is running as well. Stop now.
    await f.receive_json_from(timeout=5)
    await q.receive_json_from(timeout=5)
    leftovers = await host.runtime.stop(drain_timeout=0)
    assert len(leftovers) == 3
    closing = asyncio.create_task(close_all(CLOSE_SHUTDOWN, timeout=5))
    failed = [await f.receive_json_from(timeout=5) for _ in range(3)]
    assert sorted(m["id"] for m in failed) == ["queued", "running", "waiting"]
    assert {(m["type"], m["error"]) for m in failed} == {("failed", "scheduler shutting down")}
    assert await f.receive_output(timeout=5) == {
        "type": "websocket.close",
        "code": CLOSE_SHUTDOWN,
    }
    assert await q.receive_output(timeout=5) == {
        "type": "websocket.close",
        "code": CLOSE_SHUTDOWN,
    }
    await f.disconnect()
    await q.disconnect()
    assert await closing == 2
    assert not OPEN_SOCKETS


async def test_requests_a_leaving_querier_held_come_back_in_the_order_they_were_handed(
    host: Any, tokens: dict[str, str]
) -> None:
    f = await connect("/ws/frontend/", tokens["frontend"])
    q = await start_querier(tokens["querier"])
    for rid in ("r1", "r2", "r3"):
        await f.send_json_to(enqueue(rid, tenant="ordered", query=rid))
        await f.receive_json_from(timeout=5)
    handed = [await q.receive_json_from(timeout=5) for _ in range(3)]
    assert [r["query"] for r in handed] == ["r1", "r2", "r3"]
    await q.disconnect()
    one = await connect("/ws/querier/", tokens["querier"])
    await one.send_json_to({"type": "hello", "querier_id": "q-2", "workers": 1})
    await one.receive_json_from(timeout=5)
    again = []
    for _ in range(3):
        request = await one.receive_json_from(timeout=5)
        again.append(request["query"])
        await one.send_json_to(
            {"type": "result", "worker": request["worker"], "id": request["id"], "status": 200}
        )
    assert again == ["r1", "r2", "r3"]
    await one.disconnect()
    await f.disconnect()
