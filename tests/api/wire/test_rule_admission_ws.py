"""Websocket frontends: rejection (422), rule hit counts over REST and /metrics, dry run."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from api.store.models import ConfigRevision
from api.store.services import api_token_issue, tenant_put
from api.wire import runtime_host
from config.asgi import application
from scheduler_core.rejection import REJECTION_MESSAGE

pytestmark = pytest.mark.django_db(transaction=True)

RULES: dict[str, Any] = {
    "query_priority": {
        "enabled": True,
        "default_priority": 0,
        "priorities": [
            {"priority": 5, "query_attributes": [{"regex": "errors"}, {"regex": "latency"}]}
        ],
    },
    "query_rejection": {"enabled": True, "query_attributes": [{"regex": "expensive"}]},
}


@pytest.fixture
def tokens(transactional_db: None) -> dict[str, str]:
    roles = ("frontend", "querier", "viewer", "editor")
    return {role: api_token_issue(name=role, role=role)[1] for role in roles}


@pytest.fixture
def team(transactional_db: None) -> None:
    tenant_put(
        tenant_id="team",
        config=RULES,
        expected_version=None,
        author=None,
        source=ConfigRevision.Source.CLI,
    )


@pytest.fixture
async def host(
    settings: Any, tokens: dict[str, str], team: None
) -> AsyncIterator[runtime_host.RuntimeHost]:
    settings.GRPC_PORT = 0
    settings.CONFIG_IMPORT_IN_WORKER_PROCESS = False
    started = await runtime_host.ensure_started()
    yield started
    await runtime_host.shutdown(drain_timeout=0)


async def _connect(path: str, token: str) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(
        application, path, headers=[(b"authorization", f"Bearer {token}".encode())]
    )
    connected, _ = await comm.connect(timeout=5)
    assert connected
    return comm


def _enqueue(rid: int, query: str) -> dict[str, Any]:
    now = time.time()
    return {
        "type": "enqueue",
        "id": rid,
        "tenant": "team",
        "query": query,
        "start": now - 600,
        "end": now,
        "step": 15,
    }


async def _api(token: str, method: str, path: str, body: Any = None) -> Any:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    call = getattr(client, method)
    kwargs = {"content_type": "application/json", "data": body} if body is not None else {}
    response = await sync_to_async(call)(path, **kwargs)
    assert response.status_code == 200, response.content
    return response.json()


async def test_a_rejected_enqueue_gets_422_naming_the_rule_and_never_reaches_a_querier(
    host: runtime_host.RuntimeHost, tokens: dict[str, str]
) -> None:
    frontend = await _connect("/ws/frontend/", tokens["frontend"])
    querier = await _connect("/ws/querier/", tokens["querier"])
    await querier.send_json_to({"type": "hello", "querier_id": "q-1", "workers": 4})
    assert (await querier.receive_json_from(timeout=5))["type"] == "welcome"

    await frontend.send_json_to(_enqueue(1, "sum(rate(expensive_total[5m]))"))
    rejected = await frontend.receive_json_from(timeout=5)
    assert rejected["type"] == "rejected" and rejected["status"] == 422
    assert REJECTION_MESSAGE in rejected["error"]
    assert "'team'" in rejected["error"] and "query_attributes[0]" in rejected["error"]

    await frontend.send_json_to(_enqueue(2, "sum(rate(latency_seconds[5m]))"))
    assert (await frontend.receive_json_from(timeout=5))["priority"] == 5
    request = await querier.receive_json_from(timeout=5)
    assert request["type"] == "request" and request["query"] == "sum(rate(latency_seconds[5m]))"
    assert await querier.receive_nothing(timeout=0.2)  # the rejected one never came
    await querier.send_json_to(
        {"type": "result", "worker": request["worker"], "id": request["id"], "body": 1}
    )
    assert (await frontend.receive_json_from(timeout=5))["type"] == "result"

    stats = await _api(tokens["viewer"], "get", "/api/v1/tenants/team/rule-stats/")
    assert stats["tenant"] == "team" and stats["total"]["5m"] == 2
    assert stats["rejection"] == [{"index": 0, "rejected": {"5m": 1, "1h": 1, "version": 1}}]
    (rule,) = stats["priorities"]
    assert rule["priority"] == 5 and rule["matched"]["version"] == 1
    assert [a["matched"]["1h"] for a in rule["attributes"]] == [0, 1]
    assert stats["default"]["matched"]["1h"] == 0
    assert stats["replicas"][0]["current"] is True
    assert 0 <= stats["counting_seconds"] < 60  # since the first request under this config

    metrics = (await sync_to_async(Client().get)("/metrics")).content.decode()
    matches = "cortex_query_scheduler_priority_rule_matches_total"
    assert f'{matches}{{attribute="1",priority="5",user="team"}} 1.0' in metrics
    assert (
        'cortex_query_frontend_rejected_queries_total{reason="query_rejection",user="team"} 1.0'
        in metrics
    )
    await frontend.disconnect()
    await querier.disconnect()


async def test_a_dry_run_replays_the_sampled_traffic_against_a_draft_and_writes_nothing(
    host: runtime_host.RuntimeHost, tokens: dict[str, str]
) -> None:
    frontend = await _connect("/ws/frontend/", tokens["frontend"])
    for rid, query in enumerate(["errors_total", "up", "up", "expensive_total", "latency"]):
        await frontend.send_json_to(_enqueue(rid, query))
        await frontend.receive_json_from(timeout=5)
    draft = {
        "query_priority": {
            "enabled": True,
            "default_priority": 2,
            "priorities": [
                {
                    "priority": 5,
                    "reserved_queriers": 1,
                    "query_attributes": [{"regex": "errors"}],
                }
            ],
        }
    }
    before = await _api(tokens["viewer"], "get", "/api/v1/tenants/team/")
    report = await _api(tokens["viewer"], "post", "/api/v1/tenants/team/dry-run/", draft)
    assert report["sample"] == 5
    assert report["rejected"] == 0
    changed = {(c["from"], c["to"]): c for c in report["changed"]}
    assert changed[(0, 2)]["count"] == 2 and changed[(0, 2)]["examples"] == ["up"]
    assert changed[("rejected", 2)]["count"] == 1
    assert changed[(5, 2)]["examples"] == ["latency"]
    assert report["unchanged"] == 1
    assert report["reservations"] == {"before": {}, "after": {}}  # no querier connected
    assert await _api(tokens["viewer"], "get", "/api/v1/tenants/team/") == before
    await frontend.disconnect()


async def test_a_bad_draft_is_refused_with_the_field_path(
    host: runtime_host.RuntimeHost, tokens: dict[str, str]
) -> None:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {tokens['viewer']}")
    body = {"query_rejection": {"query_attributes": [{"regex": "("}]}}
    response = await sync_to_async(client.post)(
        "/api/v1/tenants/team/dry-run/", data=body, content_type="application/json"
    )
    assert response.status_code == 400
    assert "regex" in response.json()["query_rejection"]["query_attributes"]["0"]


async def test_a_runtime_config_dry_run_reports_each_sampled_tenants_traffic(
    host: runtime_host.RuntimeHost, tokens: dict[str, str]
) -> None:
    frontend = await _connect("/ws/frontend/", tokens["frontend"])
    for rid, query in enumerate(["errors_total", "expensive_total"]):
        await frontend.send_json_to(_enqueue(rid, query))
        await frontend.receive_json_from(timeout=5)
    document = {"overrides": {"team": {"query_priority": RULES["query_priority"]}}}
    client = Client(HTTP_AUTHORIZATION=f"Bearer {tokens['editor']}")
    response = await sync_to_async(client.put)(
        "/api/v1/runtime-config/?dry_run=1", data=document, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["dry_run"] is True and body["applied"] is False
    report = body["traffic"]["team"]
    # Without its query_rejection block the expensive query is no longer rejected.
    assert (report["sample"], report["unchanged"], report["rejected"]) == (2, 1, 0)
    assert report["changed"] == [
        {"from": "rejected", "to": 0, "count": 1, "examples": ["expensive_total"]}
    ]
    stored = await _api(tokens["viewer"], "get", "/api/v1/tenants/team/")
    assert stored == RULES
    await frontend.disconnect()
