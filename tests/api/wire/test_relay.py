"""The loadtest's relay: the scheduler's frames with no scheduling in between."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.urls import path

from api.store.services import api_token_issue
from api.wire.consumers.relay import RelayFrontendConsumer, RelayQuerierConsumer

pytestmark = pytest.mark.django_db(transaction=True)

# Mounted here as `manage.py loadtest` mounts it (LOADTEST_RELAY), without
# depending on the flag being set when the routes were imported.
relay_app = URLRouter(
    [
        path("ws/relay/frontend/", RelayFrontendConsumer.as_asgi()),
        path("ws/relay/querier/", RelayQuerierConsumer.as_asgi()),
    ]
)


async def open_socket(url: str, role: str) -> WebsocketCommunicator:
    _, token = await sync_to_async(api_token_issue)(name=f"relay-{role}", role=role)
    comm = WebsocketCommunicator(
        relay_app, url, headers=[(b"authorization", f"Bearer {token}".encode())]
    )
    connected, _ = await comm.connect(timeout=5)
    assert connected
    return comm


async def querier() -> WebsocketCommunicator:
    q = await open_socket("/ws/relay/querier/", "querier")
    await q.send_json_to({"type": "hello", "querier_id": "rq", "workers": 4})
    assert (await q.receive_json_from(timeout=5))["type"] == "welcome"
    return q


ENQUEUE = {"type": "enqueue", "id": 7, "tenant": "t", "query": "up", "headers": {"K": "v"}}


async def answer(q: WebsocketCommunicator) -> dict[str, Any]:
    request = await q.receive_json_from(timeout=5)
    assert (request["type"], request["tenant"], request["headers"]) == ("request", "t", {"K": "v"})
    await q.send_json_to(
        {"type": "result", "worker": request["worker"], "id": request["id"], "status": 200}
    )
    return request


async def test_the_relay_acks_an_enqueue_as_the_scheduler_does_then_relays_request_and_result() -> (
    None
):
    q = await querier()
    f = await open_socket("/ws/relay/frontend/", "frontend")
    await f.send_json_to(ENQUEUE)
    ack = await f.receive_json_from(timeout=5)
    assert (ack["type"], ack["id"], set(ack)) == (
        "enqueued",
        7,
        {"type", "id", "component", "priority"},
    )
    await answer(q)
    result = await f.receive_json_from(timeout=5)
    assert (result["type"], result["id"], result["status"]) == ("result", 7, 200)
    assert await f.receive_nothing(timeout=0.1)
    await f.disconnect()
    await q.disconnect()


async def test_ack_0_on_the_frontend_url_relays_without_the_ack() -> None:
    q = await querier()
    f = await open_socket("/ws/relay/frontend/?ack=0", "frontend")
    await f.send_json_to(ENQUEUE)
    await answer(q)
    result = await f.receive_json_from(timeout=5)
    assert (result["type"], result["id"]) == ("result", 7)
    await f.disconnect()
    await q.disconnect()
