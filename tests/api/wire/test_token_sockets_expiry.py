"""A token's expiry ends its sockets as a revocation does: refused at the door, closed when open.

Nothing announces an expiry, so the reconcile's token check
(`RuntimeHost.close_revoked_sockets`) is what finds it; the clock is moved
past the expiry instead of waiting for it.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.utils import timezone

from api.store.services import api_token_issue, api_token_revoke
from api.wire import runtime_host, token_sockets
from config.asgi import application
from tests.api.store.test_token_expiry import set_clock
from tests.api.wire.test_token_sockets import (
    closed_for_revocation,
    connect,
    enqueue,
    querier_running_r1,
)

pytestmark = pytest.mark.django_db(transaction=True)

HOUR = timedelta(hours=1)


@pytest.fixture
def tokens(transactional_db: None) -> dict[str, tuple[int, str]]:
    """Frontend and querier tokens expiring in an hour, and a frontend one that never does."""
    expires_at = timezone.now() + HOUR
    issued = {}
    for name, role, expiry in (
        ("frontend", "frontend", expires_at),
        ("querier", "querier", expires_at),
        ("other", "frontend", None),
    ):
        token, plaintext = api_token_issue(name=name, role=role, expires_at=expiry)
        issued[name] = (token.pk, plaintext)
    return issued


def past_the_expiry(monkeypatch: pytest.MonkeyPatch) -> None:
    set_clock(monkeypatch, timezone.now() + HOUR + timedelta(seconds=1))


async def test_an_expired_token_is_refused_at_the_websocket_door_as_a_revoked_one(
    host: Any, tokens: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    expiring = tokens["frontend"][1]
    await (await connect("/ws/frontend/", expiring)).disconnect()  # works until its expiry
    revoked_text = await database_sync_to_async(_issue_revoked)()
    past_the_expiry(monkeypatch)
    refusals = []
    for plaintext in (expiring, revoked_text):
        headers = [(b"authorization", f"Bearer {plaintext}".encode())]
        comm = WebsocketCommunicator(application, "/ws/frontend/", headers=headers)
        refusals.append(await comm.connect(timeout=5))
    assert refusals == [(False, 4001), (False, 4001)]


def _issue_revoked() -> str:
    token, plaintext = api_token_issue(name="revoked", role="frontend")
    api_token_revoke(token_id=token.pk)
    return plaintext


async def test_an_open_frontend_socket_is_closed_at_the_first_check_past_its_expiry(
    host: Any, tokens: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    token_id, plaintext = tokens["frontend"]
    comm = await connect("/ws/frontend/", plaintext)
    other = await connect("/ws/frontend/", tokens["other"][1])
    await comm.send_json_to(enqueue("r1"))
    assert (await comm.receive_json_from(timeout=5))["type"] == "enqueued"
    assert await host.close_revoked_sockets() == 0  # not expired yet

    past_the_expiry(monkeypatch)
    assert await host.close_revoked_sockets() == 1
    await closed_for_revocation(comm, token_sockets.EXPIRED)
    assert len(host.runtime.queue) == 0  # its queued request was cancelled, as on revocation
    assert token_sockets.registry.count(token_id) == 0

    # A token without an expiry is untouched however late it is.
    assert await host.close_revoked_sockets() == 0
    await other.send_json_to(enqueue("r2"))
    assert (await other.receive_json_from(timeout=5))["type"] == "enqueued"
    await other.disconnect()


async def test_a_querier_whose_token_expires_mid_request_hands_the_request_back(
    host: Any, tokens: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    frontend, querier, _ = await querier_running_r1(tokens, "other", "q-expiring")
    past_the_expiry(monkeypatch)
    assert await host.close_revoked_sockets() == 1
    await closed_for_revocation(querier, token_sockets.EXPIRED)
    snap = host.runtime.snapshot()
    assert len(host.runtime.queue) == 1  # back in its queue, not lost
    assert host.runtime.queue.in_flight_count() == 0
    assert not any(q.connected for q in snap.queriers if q.querier_id == "q-expiring")
    await frontend.disconnect()


async def test_a_result_on_the_socket_when_the_querier_token_expires_ends_the_request_once(
    host: Any, tokens: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    frontend, querier, request = await querier_running_r1(tokens, "other", "q-expiring")
    result = {"type": "result", "worker": request["worker"], "id": request["id"], "status": 200}
    await querier.send_input({"type": "websocket.receive", "text": json.dumps(result)})
    past_the_expiry(monkeypatch)
    assert await host.close_revoked_sockets() == 1
    await closed_for_revocation(querier, token_sockets.EXPIRED)
    answer = await frontend.receive_json_from(timeout=5)
    assert (answer["type"], answer["id"], answer["status"]) == ("result", "r1", 200)
    assert len(host.runtime.queue) == 0 and host.runtime.queue.in_flight_count() == 0
    assert await frontend.receive_nothing(timeout=0.1)  # one answer, not a second run
    await frontend.disconnect()


async def test_the_reconcile_loop_closes_a_socket_once_its_token_expires(
    settings: Any, tokens: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.GRPC_PORT = 0
    settings.CONFIG_RECONCILE_SECONDS = 0.05
    await runtime_host.ensure_started()
    try:
        comm = await connect("/ws/querier/", tokens["querier"][1])
        past_the_expiry(monkeypatch)
        await closed_for_revocation(comm, token_sockets.EXPIRED)
    finally:
        await runtime_host.shutdown(drain_timeout=0)
