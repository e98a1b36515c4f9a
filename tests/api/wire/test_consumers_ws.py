"""Frontend and querier consumers with channels' WebsocketCommunicator."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.db import OperationalError

from api.store.models import ConfigRevision
from api.store.services import api_token_issue, tenant_put
from api.wire.consumers import base
from config.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)

NOW = time.time()


@pytest.fixture
def tokens(transactional_db: None) -> dict[str, str]:
    return {
        role: api_token_issue(name=role, role=role)[1] for role in ("frontend", "querier", "viewer")
    }


@pytest.fixture
def limited_tenant(transactional_db: None) -> None:
    tenant_put(
        tenant_id="small",
        config={"max_outstanding_requests_per_tenant": 2},
        expected_version=None,
        author=None,
        source=ConfigRevision.Source.CLI,
    )


async def connect(path: str, token: str | None, *, header: bool = True) -> WebsocketCommunicator:
    headers = [(b"authorization", f"Bearer {token}".encode())] if token and header else []
    if token and not header:
        path = f"{path}?token={token}"
    comm = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await comm.connect(timeout=5)
    assert connected
    return comm


async def querier(token: str, querier_id: str = "q-1", workers: int = 4) -> WebsocketCommunicator:
    comm = await connect("/ws/querier/", token)
    await comm.send_json_to({"type": "hello", "querier_id": querier_id, "workers": workers})
    welcome = await comm.receive_json_from(timeout=5)
    assert welcome["type"] == "welcome"
    return comm


def enqueue(rid: Any, tenant: str = "t1", **extra: Any) -> dict[str, Any]:
    msg = {
        "type": "enqueue",
        "id": rid,
        "tenant": tenant,
        "query": "sum(rate(http_requests_total[5m]))",
        "start": NOW - 3600,
        "end": NOW,
        "step": 60,
    }
    msg.update(extra)
    return msg


async def test_a_missing_token_is_refused_before_the_handshake(host: Any) -> None:
    comm = WebsocketCommunicator(application, "/ws/frontend/")
    connected, code = await comm.connect(timeout=5)
    assert not connected
    assert code == 4001


async def test_a_wrong_token_is_refused(host: Any) -> None:
    comm = WebsocketCommunicator(application, "/ws/querier/?token=qi_not-a-token")
    connected, code = await comm.connect(timeout=5)
    assert (connected, code) == (False, 4001)


async def test_a_token_of_another_role_is_forbidden(host: Any, tokens: dict[str, str]) -> None:
    comm = WebsocketCommunicator(application, f"/ws/querier/?token={tokens['frontend']}")
    assert await comm.connect(timeout=5) == (False, 4003)
    comm = WebsocketCommunicator(application, f"/ws/frontend/?token={tokens['viewer']}")
    assert await comm.connect(timeout=5) == (False, 4003)


@pytest.mark.parametrize("path", ["/ws/frontend/", "/ws/querier/"])
async def test_a_database_that_does_not_answer_the_token_check_is_said_not_taken_for_a_bad_token(
    host: Any, tokens: dict[str, str], monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    def down(plaintext: str) -> None:
        raise OperationalError("could not connect to server: Connection refused")

    monkeypatch.setattr(base, "api_token_authenticate", down)
    comm = WebsocketCommunicator(application, f"{path}?token={tokens['frontend']}")
    assert await comm.connect(timeout=5) == (True, None)
    error = await comm.receive_json_from(timeout=5)
    assert (error["type"], error["status"]) == ("error", 503)
    assert error["error"].startswith("the token could not be checked: the database did not answer")
    assert await comm.receive_output(timeout=5) == {"type": "websocket.close", "code": 4503}
    await comm.disconnect()  # as Daphne says a closed socket is gone: it leaves OPEN_SOCKETS


async def test_enqueue_request_result_round_trip(host: Any, tokens: dict[str, str]) -> None:
    q = await querier(tokens["querier"])
    f = await connect("/ws/frontend/", tokens["frontend"], header=False)
    await f.send_json_to(enqueue("a-1", headers={"User-Agent": "grafana"}))
    assert await f.receive_json_from(timeout=5) == {
        "type": "enqueued",
        "id": "a-1",
        "component": "ingester",
        "priority": 0,
    }
    request = await q.receive_json_from(timeout=5)
    assert request["type"] == "request"
    assert request["tenant"] == "t1"
    assert request["component"] == "ingester"
    assert request["id"] != "a-1"  # runtime ids are unique across connections
    await q.send_json_to(
        {
            "type": "result",
            "worker": request["worker"],
            "id": request["id"],
            "status": 200,
            "body": "ok",
        }
    )
    result = await f.receive_json_from(timeout=5)
    assert result["type"] == "result"
    assert (result["id"], result["status"], result["body"], result["querier"]) == (
        "a-1",
        200,
        "ok",
        "q-1",
    )
    assert result["queue_seconds"] >= 0
    await f.disconnect()
    await q.disconnect()


async def test_an_explicit_component_overrides_the_time_range(
    host: Any, tokens: dict[str, str]
) -> None:
    f = await connect("/ws/frontend/", tokens["frontend"])
    await f.send_json_to(enqueue(1, component="store-gateway"))
    reply = await f.receive_json_from(timeout=5)
    assert reply["component"] == "store-gateway"
    await f.disconnect()


async def test_over_the_tenant_limit_the_frontend_gets_429(
    limited_tenant: None, host: Any, tokens: dict[str, str]
) -> None:
    f = await connect("/ws/frontend/", tokens["frontend"])
    for rid in (1, 2):
        await f.send_json_to(enqueue(rid, tenant="small"))
        assert (await f.receive_json_from(timeout=5))["type"] == "enqueued"
    await f.send_json_to(enqueue(3, tenant="small"))
    assert await f.receive_json_from(timeout=5) == {
        "type": "rejected",
        "id": 3,
        "status": 429,
        "error": "too many outstanding requests",
    }
    await f.disconnect()


async def test_a_tenant_named_again_in_a_federated_id_is_the_same_queue_and_limit(
    limited_tenant: None, host: Any, tokens: dict[str, str]
) -> None:
    """Queued by its raw text, each of small, small|small, ... was a queue of its own."""
    f = await connect("/ws/frontend/", tokens["frontend"])
    for rid, tenant in ((1, "small"), (2, "small|small")):
        await f.send_json_to(enqueue(rid, tenant=tenant))
        assert (await f.receive_json_from(timeout=5))["type"] == "enqueued"
    await f.send_json_to(enqueue(3, tenant="small|small|small"))
    assert (await f.receive_json_from(timeout=5))["status"] == 429
    assert host.runtime.queue.tenant_length("small") == 2
    await f.disconnect()


async def test_a_federated_id_over_max_federated_tenants_is_a_400_naming_tenant(
    host: Any, tokens: dict[str, str]
) -> None:
    host.runtime.set_config(dataclasses.replace(host.runtime.config, max_federated_tenants=2))
    f = await connect("/ws/frontend/", tokens["frontend"])
    await f.send_json_to(enqueue(1, tenant="a|b|c"))
    reply = await f.receive_json_from(timeout=5)
    got = (reply["type"], reply["status"], reply["field"], reply["id"])
    assert got == ("error", 400, "tenant", 1)
    assert reply["error"] == "the org ID names 3 tenants; at most 2 may be federated"
    assert host.runtime.queue.tenant_length("a|b|c") == 0
    await f.send_json_to(enqueue(2, tenant="a|b"))
    assert (await f.receive_json_from(timeout=5))["type"] == "enqueued"
    await f.disconnect()


async def test_cancel_removes_a_queued_request_at_once(host: Any, tokens: dict[str, str]) -> None:
    f = await connect("/ws/frontend/", tokens["frontend"])
    await f.send_json_to(enqueue("c"))
    await f.receive_json_from(timeout=5)
    assert len(host.runtime.queue) == 1
    await f.send_json_to({"type": "cancel", "id": "c"})
    assert await f.receive_json_from(timeout=5) == {"type": "cancelled", "id": "c"}
    assert len(host.runtime.queue) == 0
    await f.send_json_to({"type": "cancel", "id": "c"})
    error = await f.receive_json_from(timeout=5)
    assert (error["type"], error["field"], error["id"]) == ("error", "id", "c")
    await f.disconnect()


async def test_malformed_messages_get_errors_and_the_socket_stays_open(
    host: Any, tokens: dict[str, str]
) -> None:
    f = await connect("/ws/frontend/", tokens["frontend"])
    await f.send_to(text_data="{not json")
    assert (await f.receive_json_from(timeout=5))["status"] == 400
    await f.send_json_to({"type": "launch"})
    assert (await f.receive_json_from(timeout=5))["field"] == "type"
    await f.send_json_to(enqueue(5, start="yesterday"))
    bad = await f.receive_json_from(timeout=5)
    assert (bad["id"], bad["field"]) == (5, "start")
    await f.send_json_to(enqueue(6))
    assert (await f.receive_json_from(timeout=5))["type"] == "enqueued"
    await f.disconnect()


async def test_a_querier_that_vanishes_mid_request_gets_it_retried_then_failed(
    host: Any, tokens: dict[str, str]
) -> None:
    f = await connect("/ws/frontend/", tokens["frontend"])
    first = await querier(tokens["querier"], "q-1")
    await f.send_json_to(enqueue("r"))
    await f.receive_json_from(timeout=5)
    await first.receive_json_from(timeout=5)
    await first.disconnect()  # the request goes back to the front, once
    second = await querier(tokens["querier"], "q-2")
    retried = await second.receive_json_from(timeout=5)
    assert retried["type"] == "request"
    await second.disconnect()  # second loss: failed back to the frontend
    failed = await f.receive_json_from(timeout=5)
    assert failed["type"] == "failed" and failed["id"] == "r"
    assert "disconnected" in failed["error"]
    await f.disconnect()


async def test_a_shutdown_announced_on_another_socket_closes_this_one_and_a_reconnect_works(
    host: Any, tokens: dict[str, str]
) -> None:
    first = await querier(tokens["querier"], "q-same", workers=2)
    other = await querier(tokens["querier"], "q-same", workers=1)
    await other.send_json_to({"type": "shutdown"})
    await other.disconnect()
    said = await first.receive_json_from(timeout=5)
    assert (said["type"], said["status"]) == ("error", 503)
    assert "announced as shutting down on another connection" in said["error"]
    assert await first.receive_output(timeout=5) == {"type": "websocket.close", "code": 1000}
    await first.disconnect()
    # The querier comes back on a new connection, as a Cortex querier's reconnect does.
    again = await querier(tokens["querier"], "q-same", workers=1)
    f = await connect("/ws/frontend/", tokens["frontend"])
    await f.send_json_to(enqueue("after"))
    assert (await f.receive_json_from(timeout=5))["type"] == "enqueued"
    handed = await again.receive_json_from(timeout=5)
    assert (handed["type"], handed["tenant"]) == ("request", "t1")
    await again.disconnect()
    await f.disconnect()


async def test_a_frontend_that_disconnects_cancels_its_queued_requests(
    host: Any, tokens: dict[str, str]
) -> None:
    f = await connect("/ws/frontend/", tokens["frontend"])
    for rid in range(3):
        await f.send_json_to(enqueue(rid))
        await f.receive_json_from(timeout=5)
    assert len(host.runtime.queue) == 3
    await f.disconnect()
    await asyncio.sleep(0.05)
    assert len(host.runtime.queue) == 0
    assert host.stats.counts(60)["cancelled"] == 3


async def test_a_result_for_a_request_the_worker_does_not_run_is_an_error(
    host: Any, tokens: dict[str, str]
) -> None:
    q = await querier(tokens["querier"])
    await q.send_json_to({"type": "result", "worker": 0, "id": "ws:nobody:1", "status": 200})
    error = await q.receive_json_from(timeout=5)
    assert (error["type"], error["field"]) == ("error", "id")
    await q.send_json_to({"type": "result", "worker": 99, "id": "x", "status": 200})
    assert (await q.receive_json_from(timeout=5))["field"] == "worker"
    await q.disconnect()


async def test_hello_is_raised_to_four_workers_and_shutdown_stops_new_work(
    host: Any, tokens: dict[str, str]
) -> None:
    q = await connect("/ws/querier/", tokens["querier"])
    await q.send_json_to({"type": "hello", "querier_id": "q-small", "workers": 1})
    assert await q.receive_json_from(timeout=5) == {"type": "welcome", "workers": [0, 1, 2, 3]}
    await q.send_json_to({"type": "shutdown"})
    await asyncio.sleep(0.05)
    f = await connect("/ws/frontend/", tokens["frontend"])
    await f.send_json_to(enqueue("late"))
    await f.receive_json_from(timeout=5)
    assert await q.receive_nothing(timeout=0.2)
    assert len(host.runtime.queue) == 1
    await f.disconnect()
    await q.disconnect()


async def test_a_frontend_cancel_of_a_running_request_drops_its_late_result(
    host: Any, tokens: dict[str, str]
) -> None:
    q = await querier(tokens["querier"])
    f = await connect("/ws/frontend/", tokens["frontend"])
    await f.send_json_to(enqueue("slow"))
    await f.receive_json_from(timeout=5)
    request = await q.receive_json_from(timeout=5)
    await f.send_json_to({"type": "cancel", "id": "slow"})
    assert (await f.receive_json_from(timeout=5))["type"] == "cancelled"
    await q.send_json_to({"type": "result", "worker": request["worker"], "id": request["id"]})
    assert await f.receive_nothing(timeout=0.2)
    # The worker is free again and takes the next request.
    await f.send_json_to(enqueue("next"))
    await f.receive_json_from(timeout=5)
    assert (await q.receive_json_from(timeout=5))["type"] == "request"
    await f.disconnect()
    await q.disconnect()


async def test_a_failed_end_reaches_the_client_before_the_same_id_accepted_again(
    host: Any, tokens: dict[str, str]
) -> None:
    # Found by test_consumers_chaos: the `failed` frame, written by a task,
    # came after the `enqueued` of the same id enqueued again in that turn.
    comm = await connect("/ws/frontend/", tokens["frontend"])
    await comm.send_json_to(enqueue(1))
    assert (await comm.receive_json_from(timeout=5))["type"] == "enqueued"
    [request] = list(host.runtime.queue.listing().queued())
    # The enqueue again is read first, then the request fails, in one turn.
    await comm.send_input({"type": "websocket.receive", "text": json.dumps(enqueue(1))})
    host.runtime.fail(request.id, "cancelled by an operator")
    frames = [await comm.receive_json_from(timeout=5) for _ in range(2)]
    assert [(f["type"], f["id"]) for f in frames] == [("failed", 1), ("enqueued", 1)]
    await comm.disconnect()
