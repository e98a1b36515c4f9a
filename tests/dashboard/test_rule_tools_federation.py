"""The operator pages count federated traffic (`team|zeta` for `team`) as the REST answers do.

A federated request is judged by its tenants' combined limits and waits in
its own queue: the tenants list and the dry-run box include it, shown apart
under its org ID so it is not taken for the tenant's own.
"""

from __future__ import annotations

import json
import re
from html import unescape
from types import SimpleNamespace
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import Client

from api.store.models import Tenant
from dashboard import views_tenants
from dashboard.snapshot_index import SnapshotIndex
from scheduler_core.model import INGESTER, STORE_GATEWAY, Request
from tests.api.rest.test_rest_rule_tools_federation import setup  # noqa: F401 (a fixture)
from tests.dashboard.test_rule_tools import REJECTING, _post_fields, federated_sampled, sampled
from tests.fakes import clocked_queue

pytestmark = pytest.mark.django_db(transaction=True)


def _share_cells(html: str) -> dict[str, str]:
    """Tenant -> the text of its default-share cell, tags and spacing dropped."""
    rows = re.findall(
        r'<a href="/tenants/([^/]+)/">.*?<td class="num default-share">(.*?)</td>', html, re.S
    )
    return {tenant: " ".join(re.sub(r"<[^>]+>", " ", cell).split()) for tenant, cell in rows}


async def test_the_tenants_list_counts_federated_requests_in_the_default_share_and_says_so(
    setup: dict[str, str],  # noqa: F811 (the fixture imported above)
    viewer: User,
) -> None:
    """team: its own errors_total, and team|zeta's five (team's rules judged
    them: "up" took team's default); zeta: only those five, none its default."""
    client = Client()
    await sync_to_async(client.force_login)(viewer)
    response = await sync_to_async(client.get)("/tenants/")
    cells = _share_cells(response.content.decode())
    assert cells == {
        "team": "17% of 6 incl. 5 federated, 20% default",
        "zeta": "0% of 5 incl. 5 federated, 0% default",
    }
    assert 'title="requests of federated org IDs naming this tenant' in response.content.decode()


def _serving_lines(html: str) -> list[dict[str, Any]]:
    lines = re.findall(r'<p class="dry-run-serving"([^>]*)>', html)
    attrs = [dict(re.findall(r'data-([a-z]+)="([^"]*)"', line)) for line in lines]
    for attr in attrs:
        attr["serving"] = json.loads(unescape(attr["serving"]))
    return attrs


def test_the_dry_runs_reservation_sentences_count_federated_requests_under_their_own_queue(
    viewer_client: Client, team: Tenant, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.CONFIG_IMPORT_IN_WORKER_PROCESS = False
    sampled(monkeypatch, "errors_total", "up", "down")
    federated_sampled(monkeypatch, "other|team", "errors_total", "up")
    fields = {
        **_post_fields(REJECTING),
        "max_queriers_per_tenant": "2",
        "query_priority.priorities[0].reserved_queriers": "1",
    }
    html = viewer_client.post("/tenants/team/dry-run/", fields).content.decode()
    assert 'id="dry-run-sample">5<' in html  # the summary still counts all five
    assert "queue apart, each under its whole ID" in html
    own_now, own_then, fed_now, fed_then = _serving_lines(html)
    assert [line["label"] for line in (own_now, own_then, fed_now, fed_then)] == [
        "Now",
        "With the form",
        "other|team, now",
        "other|team, with the form",
    ]
    # team's queue: its own "up" and "down" wait for what the reservation leaves.
    assert (own_then["tenant"], own_then["below"], own_then["sample"]) == ("team", "2", "3")
    # other|team's queue has the combined limits: team's draft (other has no
    # block), so its own shard of 2 with one reserved, and its "up" below it.
    assert fed_now["serving"] == {"shard": None, "queriers": 3, "reserved": []}
    assert "below" not in fed_now
    shard = fed_then["serving"]["shard"]
    assert len(shard) == 2 and fed_then["serving"]["reserved"] == [[5, [shard[0]]]]
    assert (fed_then["tenant"], fed_then["below"], fed_then["sample"]) == ("other|team", "1", "2")


def test_a_dry_run_without_federated_traffic_has_no_federated_sentences(
    viewer_client: Client, team: Tenant, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.CONFIG_IMPORT_IN_WORKER_PROCESS = False
    sampled(monkeypatch, "errors_total", "up")
    html = viewer_client.post("/tenants/team/dry-run/", _post_fields(REJECTING)).content.decode()
    assert [line["label"] for line in _serving_lines(html)] == ["Now", "With the form"]
    assert "queue apart" not in html


def test_the_tenants_list_shows_requests_queued_under_federated_ids_beside_the_tenants_own(
    viewer_client: Client, team: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue, _ = clocked_queue(1000.0, max_outstanding_requests_per_tenant=100)
    sent = [("team", INGESTER), ("team|zeta", INGESTER), ("team|zeta", STORE_GATEWAY)]
    sent += [("a|team", INGESTER), ("other|zeta", INGESTER)]
    for n, (tenant, component) in enumerate(sent):
        queue.enqueue(Request(id=str(n), tenant_id=tenant, component=component))
    tick = SimpleNamespace(index=SnapshotIndex.build(queue.snapshot()))
    monkeypatch.setattr(views_tenants, "current_tick", lambda: tick)
    html = viewer_client.get("/tenants/").content.decode()
    (cell,) = re.findall(
        r'<a href="/tenants/team/">team</a></td>\s*<td class="num">(.*?)</td>', html
    )
    assert re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", cell)) == "1 + 3 federated"
    assert "each in a queue of its own: a|team, team|zeta" in cell
