"""A tenant's rule tools see the federated requests that name it (`team|zeta` for `team`).

Such a request is judged by limits combined from every tenant it names, so
`team`'s rules decide it, and saving `team` changes how it is judged: its
rule-stats and dry run must show it, under its own org ID.
"""

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
from tests.api.wire.test_rule_admission_ws import RULES

pytestmark = pytest.mark.django_db(transaction=True)

# The websocket admission tests' rules: priority 5 for errors/latency, expensive rejected.
TEAM: dict[str, Any] = RULES
ZETA: dict[str, Any] = {
    "query_rejection": {"enabled": True, "query_attributes": [{"regex": "forbidden"}]}
}
FEDERATED = ["errors_total", "latency", "up", "expensive_total", "forbidden_total"]


@pytest.fixture
async def setup(settings: Any, transactional_db: None) -> AsyncIterator[dict[str, str]]:
    settings.GRPC_PORT = 0
    settings.CONFIG_IMPORT_IN_WORKER_PROCESS = False
    for tenant_id, block in (("team", TEAM), ("zeta", ZETA)):
        await sync_to_async(tenant_put)(
            tenant_id=tenant_id,
            config=block,
            expected_version=None,
            author=None,
            source=ConfigRevision.Source.CLI,
        )
    roles = ("frontend", "viewer", "editor")
    tokens = {r: (await sync_to_async(api_token_issue)(name=r, role=r))[1] for r in roles}
    await runtime_host.ensure_started()
    comm = await frontend(tokens["frontend"])
    await enqueue_all(comm, [("team", "errors_total")] + [("team|zeta", q) for q in FEDERATED])
    yield tokens
    await comm.disconnect()
    await runtime_host.shutdown(drain_timeout=0)


async def frontend(token: str) -> WebsocketCommunicator:
    """A websocket frontend connected with `token`."""
    comm = WebsocketCommunicator(
        application, "/ws/frontend/", headers=[(b"authorization", f"Bearer {token}".encode())]
    )
    connected, _ = await comm.connect(timeout=5)
    assert connected
    return comm


async def enqueue_all(comm: WebsocketCommunicator, sent: list[tuple[str, str]]) -> None:
    """Enqueue each (org ID, query) over `comm`, a range query of the last 10 minutes."""
    for rid, (tenant, query) in enumerate(sent):
        now = time.time()
        await comm.send_json_to(
            {"type": "enqueue", "id": rid, "tenant": tenant, "query": query,
             "start": now - 600, "end": now, "step": 15}
        )  # fmt: skip
        await comm.receive_json_from(timeout=5)


async def _api(token: str, method: str, path: str, body: Any = None) -> Any:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    kwargs = {"content_type": "application/json", "data": body} if body is not None else {}
    response = await sync_to_async(getattr(client, method))(path, **kwargs)
    assert response.status_code == 200, response.content
    return response.json()


def _versions(node: dict[str, Any], key: str = "matched") -> int:
    return int(node[key]["version"])


async def test_rule_stats_count_federated_requests_in_the_rules_that_judged_them(
    setup: dict[str, str],
) -> None:
    stats = await _api(setup["viewer"], "get", "/api/v1/tenants/team/rule-stats/")
    attributes = stats["priorities"][0]["attributes"]
    # errors_total: its own and the federated one; latency only federated.
    assert [_versions(a) for a in attributes] == [2, 1]
    assert _versions(stats["default"]) == 1  # up
    assert _versions(stats["rejection"][0], "rejected") == 1  # expensive_total
    # forbidden_total was zeta's rule's to reject: in the total only.
    assert stats["total"]["version"] == 6
    assert stats["federated"] == [
        {
            "org_id": "team|zeta",
            "total": {"5m": 5, "1h": 5, "version": 5},
            "priority_rules_of": "team",
        }
    ]
    # Its own requests alone, per replica.
    assert [r["total"]["version"] for r in stats["replicas"]] == [1]


async def test_the_other_tenant_sees_its_rejection_and_whose_priority_rules_judged(
    setup: dict[str, str],
) -> None:
    stats = await _api(setup["viewer"], "get", "/api/v1/tenants/zeta/rule-stats/")
    assert _versions(stats["rejection"][0], "rejected") == 1
    assert _versions(stats["default"]) == 0  # team's priority rules judged them
    assert stats["total"]["version"] == 5
    assert [row["priority_rules_of"] for row in stats["federated"]] == ["team"]


async def test_a_dry_run_replays_federated_requests_with_the_draft_in_the_combined_limits(
    setup: dict[str, str],
) -> None:
    draft = {
        "query_priority": {
            "enabled": True,
            "default_priority": 1,
            "priorities": [{"priority": 7, "query_attributes": [{"regex": "errors"}]}],
        }
    }
    report = await _api(setup["viewer"], "post", "/api/v1/tenants/team/dry-run/", draft)
    assert report["sample"] == 6
    # zeta's rejection still holds for the federated forbidden_total.
    assert report["rejected"] == 1
    changed = {(c["from"], c["to"]): c["count"] for c in report["changed"]}
    assert changed == {(5, 7): 2, (5, 1): 1, (0, 1): 1, ("rejected", 1): 1}
    (federated,) = report["federated"]
    assert federated["org_id"] == "team|zeta"
    assert (federated["sample"], federated["rejected"], federated["unchanged"]) == (5, 1, 0)
    assert {(c["from"], c["to"]): c["examples"] for c in federated["changed"]} == {
        (5, 7): ["errors_total"],
        (5, 1): ["latency"],
        (0, 1): ["up"],
        ("rejected", 1): ["expensive_total"],
    }


async def test_a_runtime_config_dry_run_judges_a_federated_id_by_its_tenants_combined_limits(
    setup: dict[str, str],
) -> None:
    # team loses its rejection rule; zeta keeps its own.
    overrides = {"team": {"query_priority": TEAM["query_priority"]}, "zeta": ZETA}
    client = Client(HTTP_AUTHORIZATION=f"Bearer {setup['editor']}")
    response = await sync_to_async(client.put)(
        "/api/v1/runtime-config/?dry_run=1",
        data={"overrides": overrides},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    report = response.json()["traffic"]["team|zeta"]
    assert (report["sample"], report["rejected"], report["unchanged"]) == (5, 1, 3)
    assert [(c["from"], c["to"], c["examples"]) for c in report["changed"]] == [
        ("rejected", 0, ["expensive_total"])
    ]
