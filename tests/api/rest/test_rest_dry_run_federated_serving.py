"""The dry run says who would serve each federated ID's own queue (`team|zeta` for `team`).

Such an ID queues apart, sharded under the whole ID with the shard size and
reservations of its tenants' combined limits: a draft of `team` changes them
as saving it would, and a tenant named by no federated ID gets the answer
it always got.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml
from rest_framework.test import APIClient

from api.cluster.replica_board import get_board
from api.wire import rule_reports
from tests.api.rest.test_rest_rule_tools_federation import (
    TEAM,
    ZETA,
    _api,
    enqueue_all,
    frontend,
    setup,  # noqa: F401 (a fixture)
)

pytestmark = pytest.mark.django_db(transaction=True)

QUERIERS = ["q1", "q2", "q3", "q4"]
# Of QUERIERS, shuffle_shard gives a shard of 2 as (q2, q3) to "team" and
# (q1, q4) to "team|zeta", and a shard of 1 as (q4,) to "team|zeta": a row
# sharded under the tenant's ID instead of its own would show.
RESERVING: dict[str, Any] = {
    **TEAM,
    "max_queriers_per_tenant": 2,
    "query_priority": {
        **TEAM["query_priority"],
        "priorities": [{**TEAM["query_priority"]["priorities"][0], "reserved_queriers": 1}],
    },
}
ALL_OF_THEM = {"shard": None, "queriers": 4, "reserved": []}


@pytest.fixture
async def traffic(
    setup: dict[str, str],  # noqa: F811 (the fixture imported above)
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[dict[str, str]]:
    """setup's traffic, a tenant no federated ID names ("solo"), and four queriers connected."""
    monkeypatch.setattr(rule_reports, "connected_queriers", lambda: list(QUERIERS))
    comm = await frontend(setup["frontend"])
    await enqueue_all(comm, [("solo", "errors_total"), ("solo", "up")])
    yield setup
    await comm.disconnect()


async def test_a_federated_row_says_who_would_serve_its_queue_with_the_drafts_reservations(
    traffic: dict[str, str],
) -> None:
    report = await _api(traffic["viewer"], "post", "/api/v1/tenants/team/dry-run/", RESERVING)
    (row,) = report["federated"]
    # team|zeta's combined limits take team's priority rules and shard size:
    # the draft's shard of 2 and its reserved querier, under the whole ID.
    assert row["serving"] == {
        "before": ALL_OF_THEM,
        "after": {"shard": ["q1", "q4"], "queriers": 4, "reserved": [[5, ["q1"]]]},
    }
    # The tenant's own queue, sharded under its own ID.
    assert report["serving"]["after"] == {
        "shard": ["q2", "q3"],
        "queriers": 4,
        "reserved": [[5, ["q2"]]],
    }


async def test_a_federated_rows_shard_follows_the_smallest_one_with_the_draft_in_place(
    traffic: dict[str, str],
) -> None:
    draft = {**ZETA, "max_queriers_per_tenant": 1}
    report = await _api(traffic["viewer"], "post", "/api/v1/tenants/zeta/dry-run/", draft)
    (row,) = report["federated"]
    assert row["org_id"] == "team|zeta"
    # zeta's draft limits the shard; team's rules reserve nothing.
    assert row["serving"] == {
        "before": ALL_OF_THEM,
        "after": {"shard": ["q4"], "queriers": 4, "reserved": []},
    }


async def test_a_tenant_no_federated_id_names_gets_the_answer_it_always_got(
    traffic: dict[str, str],
) -> None:
    report = await _api(traffic["viewer"], "post", "/api/v1/tenants/solo/dry-run/", RESERVING)
    assert report == {
        "sample": 2,
        "unchanged": 1,
        "changed": [{"from": 0, "to": 5, "count": 1, "examples": ["errors_total"]}],
        "rejected": 0,
        "by_priority": {"before": {"0": 2}, "after": {"5": 1, "0": 1}},
        "federated": [],
        "reservations": {"before": {}, "after": {"5": ["q2"]}},
        "serving": {
            "before": ALL_OF_THEM,
            "after": {"shard": ["q2", "q3"], "queriers": 4, "reserved": [[5, ["q2"]]]},
        },
        # A lone replica's own sample, and no other replica's traffic left out.
        "replica": get_board().own_id,
        "other_replicas": [],
    }


def test_the_schema_documents_each_federated_rows_serving(viewer_api: APIClient) -> None:
    response = viewer_api.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi")
    components = yaml.safe_load(response.content)["components"]["schemas"]
    row = components["FederatedDryRun"]
    assert "serving" in row["required"]
    assert row["properties"]["serving"]["allOf"] == [{"$ref": "#/components/schemas/DryRunServing"}]
    assert (
        components["DryRunReport"]["properties"]["serving"]["allOf"]
        == (row["properties"]["serving"]["allOf"])
    )
