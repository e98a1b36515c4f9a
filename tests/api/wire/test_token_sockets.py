"""Revoking a token closes the open frontend and querier sockets it authenticated."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from api.store.models import ApiToken
from api.store.services import api_token_issue, api_token_revoke
from api.wire import runtime_host, token_sockets
from api.wire.consumers import base
from config.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)

NOW = time.time()


@pytest.fixture
def tokens(transactional_db: None) -> dict[str, tuple[int, str]]:
    issued = {}
    for name, role in (("frontend", "frontend"), ("querier", "querier"), ("other", "frontend")):
        token, plaintext = api_token_issue(name=name, role=role)
        issued[name] = (token.pk, plaintext)
    return issued


async def connect(path: str, plaintext: str) -> WebsocketCommunicator:
    headers = [(b"authorization", f"Bearer {plaintext}".encode())]
    comm = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await comm.connect(timeout=5)
    assert connected
    return comm


async def closed_for_revocation(comm: WebsocketCommunicator, why: str = "token revoked") -> None:
    """The socket says why, closes with 4001, and (the client answering) disconnects."""
    error = await comm.receive_json_from(timeout=5)
    assert (error["type"], error["status"], error["error"]) == ("error", 401, why)
    assert await comm.receive_output(timeout=5) == {
        "type": "websocket.close",
        "code": 4001,
        "reason": why,
    }
    await comm.disconnect()


def enqueue(rid: str) -> dict[str, Any]:
    return {"type": "enqueue", "id": rid, "tenant": "t1", "query": "up", "start": NOW - 60,
            "end": NOW, "step": 15}  # fmt: skip


async def querier_running_r1(
    tokens: Any, frontend_token: str = "frontend", querier_id: str = "q-revoked"
) -> tuple[WebsocketCommunicator, WebsocketCommunicator, dict[str, Any]]:
    """A frontend, and querier `querier_id` running its request "r1" (the `request` frame)."""
    frontend = await connect("/ws/frontend/", tokens[frontend_token][1])
    querier = await connect("/ws/querier/", tokens["querier"][1])
    await querier.send_json_to({"type": "hello", "querier_id": querier_id, "workers": 1})
    assert (await querier.receive_json_from(timeout=5))["type"] == "welcome"
    await frontend.send_json_to(enqueue("r1"))
    assert (await frontend.receive_json_from(timeout=5))["type"] == "enqueued"
    request = await querier.receive_json_from(timeout=5)
    assert request["type"] == "request"
    return frontend, querier, request


async def test_revoking_a_frontend_token_closes_its_socket_and_cancels_its_queued_work(
    host: Any, tokens: Any
) -> None:
    token_id, plaintext = tokens["frontend"]
    comm = await connect("/ws/frontend/", plaintext)
    other = await connect("/ws/frontend/", tokens["other"][1])
    await comm.send_json_to(enqueue("r1"))
    assert (await comm.receive_json_from(timeout=5))["type"] == "enqueued"
    assert len(host.runtime.queue) == 1

    await database_sync_to_async(api_token_revoke)(token_id=token_id)
    await closed_for_revocation(comm)
    assert len(host.runtime.queue) == 0
    assert token_sockets.registry.count(token_id) == 0

    # A socket of another token is untouched.
    await other.send_json_to(enqueue("r2"))
    assert (await other.receive_json_from(timeout=5))["type"] == "enqueued"
    await other.disconnect()


async def test_revoking_a_querier_token_closes_it_and_its_running_request_is_requeued(
    host: Any, tokens: Any
) -> None:
    token_id = tokens["querier"][0]
    frontend, querier, _ = await querier_running_r1(tokens)

    await database_sync_to_async(api_token_revoke)(token_id=token_id)
    await closed_for_revocation(querier)
    snap = host.runtime.snapshot()
    assert len(host.runtime.queue) == 1  # back at the front of its queue, not lost
    assert not any(q.connected for q in snap.queriers if q.querier_id == "q-revoked")
    await frontend.disconnect()


async def test_a_result_read_after_a_querier_token_is_revoked_still_counts(
    host: Any, tokens: Any
) -> None:
    # Found by test_consumers_chaos: the revocation stopped the worker's
    # wait, so a result already on the socket was dropped and the request
    # ran again on another querier.
    token_id = tokens["querier"][0]
    frontend, querier, request = await querier_running_r1(tokens)
    result = {"type": "result", "worker": request["worker"], "id": request["id"], "status": 200}
    # On the socket, not read yet, when the registry closes it.
    await querier.send_input({"type": "websocket.receive", "text": json.dumps(result)})
    await token_sockets.registry.close_tokens([token_id])
    await closed_for_revocation(querier)
    answer = await frontend.receive_json_from(timeout=5)
    assert (answer["type"], answer["id"], answer["status"]) == ("result", "r1", 200)
    assert len(host.runtime.queue) == 0 and host.runtime.queue.in_flight_count() == 0
    await frontend.disconnect()


async def test_a_revocation_heard_from_another_replica_closes_the_socket(
    host: Any, tokens: Any
) -> None:
    token_id, plaintext = tokens["frontend"]
    comm = await connect("/ws/frontend/", plaintext)
    layer = get_channel_layer()
    await layer.group_send(
        runtime_host.CONFIG_GROUP, {"type": "token.revoked", "token_id": token_id}
    )
    await closed_for_revocation(comm)


async def test_a_revocation_whose_news_was_lost_is_found_by_the_reconcile_check(
    host: Any, tokens: Any
) -> None:
    token_id, plaintext = tokens["frontend"]
    comm = await connect("/ws/frontend/", plaintext)
    other = await connect("/ws/frontend/", tokens["other"][1])
    # Revoked behind the scheduler's back (another process, a lost message).
    await database_sync_to_async(ApiToken.objects.filter(pk=token_id).update)(revoked=True)
    assert await comm.receive_nothing(timeout=0.1)
    assert await host.close_revoked_sockets() == 1
    await closed_for_revocation(comm)
    assert await host.close_revoked_sockets() == 0
    assert await other.receive_nothing(timeout=0.1)
    await other.disconnect()


async def test_the_reconcile_loop_runs_the_revocation_check(settings: Any, tokens: Any) -> None:
    settings.GRPC_PORT = 0
    settings.CONFIG_RECONCILE_SECONDS = 0.05
    await runtime_host.ensure_started()
    try:
        token_id, plaintext = tokens["querier"]
        comm = await connect("/ws/querier/", plaintext)
        await database_sync_to_async(ApiToken.objects.filter(pk=token_id).delete)()
        await closed_for_revocation(comm)
    finally:
        await runtime_host.shutdown(drain_timeout=0)


async def test_a_socket_that_closes_by_itself_leaves_the_registry(host: Any, tokens: Any) -> None:
    token_id, plaintext = tokens["frontend"]
    comm = await connect("/ws/frontend/", plaintext)
    assert token_sockets.registry.count(token_id) == 1
    await comm.disconnect()
    await asyncio.sleep(0)
    assert token_sockets.registry.count(token_id) == 0


async def test_the_re_check_tells_an_expired_tokens_socket_expired_and_a_revoked_ones_revoked(
    host: Any, tokens: Any
) -> None:
    # Both notices lost (nothing announces an expiry): the reconcile's
    # re-check finds them, and each socket is told the real reason.
    ran_out, revoked = tokens["frontend"], tokens["other"]
    expiring = await connect("/ws/frontend/", ran_out[1])
    revoking = await connect("/ws/frontend/", revoked[1])
    past = datetime.now(UTC) - timedelta(seconds=1)
    await database_sync_to_async(ApiToken.objects.filter(pk=ran_out[0]).update)(expires_at=past)
    await database_sync_to_async(ApiToken.objects.filter(pk=revoked[0]).update)(revoked=True)

    assert await host.close_revoked_sockets() == 2
    await closed_for_revocation(expiring, "token expired")
    await closed_for_revocation(revoking, "token revoked")


@pytest.fixture
def no_reconcile(settings: Any) -> None:
    """No reconcile round during the test: what closes a socket is not its re-check."""
    settings.CONFIG_RECONCILE_SECONDS = 300


@pytest.mark.parametrize("kind", ["revoked", "expired"])
async def test_a_token_revoked_while_its_socket_connects_closes_it_at_once(
    no_reconcile: None, host: Any, tokens: Any, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    # Revoked after the handshake read the token and before the socket was
    # registered: the close found no socket here, and the token enqueued
    # until the next reconcile.
    token_id, plaintext = tokens["frontend"]
    read = base.api_token_authenticate

    def read_then_revoke(text: str) -> Any:
        found = read(text)
        change = {"revoked": True} if kind == "revoked" else {"expires_at": datetime.now(UTC)}
        ApiToken.objects.filter(pk=token_id).update(**change)
        return found

    monkeypatch.setattr(base, "api_token_authenticate", read_then_revoke)
    comm = await connect("/ws/frontend/", plaintext)
    await closed_for_revocation(comm, f"token {kind}")
    assert token_sockets.registry.count(token_id) == 0
