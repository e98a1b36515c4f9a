"""The dry-run box says which queue its reservations are of, when federated IDs queue apart.

The "Reserved queriers" table is the tenant's own queue's; each federated
ID naming the tenant has a queue of its own, whose serving the box reads
from the REST answer (`federated[].serving`) and says below the table.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from api.store import services
from api.store.models import Tenant
from tests.dashboard.test_rule_tools import REJECTING, _post_fields, federated_sampled, sampled
from tests.dashboard.test_rule_tools_federation import _serving_lines

pytestmark = pytest.mark.django_db

URL = "/tenants/team/dry-run/"
RESERVING = {
    **_post_fields(REJECTING),
    "max_queriers_per_tenant": "2",
    "query_priority.priorities[0].reserved_queriers": "1",
}
OWN = "this tenant's own queue"
APART = "Each federated org ID naming it queues apart"


@pytest.fixture
def team(settings: Any) -> Tenant:
    settings.CONFIG_IMPORT_IN_WORKER_PROCESS = False
    return services.tenant_put(
        tenant_id="team", config=REJECTING, expected_version=None, author=None, source="cli"
    )


def _caption(html: str) -> str:
    (caption,) = re.findall(
        r'<table class="dry-run-reservations">\s*<caption>(.*?)</caption>', html
    )
    return caption


def test_the_reserved_queriers_caption_names_the_tenants_own_queue_and_where_the_others_are(
    viewer_client: Client, team: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    sampled(monkeypatch, "errors_total", "up")
    federated_sampled(monkeypatch, "other|team", "errors_total")
    html = viewer_client.post(URL, RESERVING).content.decode()
    caption = _caption(html)
    assert OWN in caption and APART in caption and "under its org ID below" in caption
    # "Below" holds: the federated queues' lines come after the table.
    assert html.index("dry-run-reservations") < html.index("dry-run-federated-note")


def test_without_federated_rows_the_reserved_queriers_caption_is_as_it_was(
    viewer_client: Client, team: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    sampled(monkeypatch, "errors_total", "up")
    html = viewer_client.post(URL, RESERVING).content.decode()
    assert _caption(html) == "Reserved queriers (of the queriers connected now)"


def test_no_reservations_of_the_own_queue_are_not_said_of_the_federated_ones(
    viewer_client: Client, team: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    sampled(monkeypatch, "errors_total")
    federated_sampled(monkeypatch, "other|team", "errors_total")
    html = viewer_client.post(URL, _post_fields(REJECTING)).content.decode()
    (said,) = re.findall(r'<p class="muted dry-run-no-reservations">(.*?)</p>', html)
    assert said.startswith(f"No reserved queriers for {OWN} before or after.") and APART in said


def test_the_federated_queues_lines_say_what_the_rest_dry_run_answers(
    viewer_client: Client, team: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    sampled(monkeypatch, "errors_total", "up")
    federated_sampled(monkeypatch, "other|team", "errors_total", "up")
    html = viewer_client.post(URL, RESERVING).content.decode()
    _, token = services.api_token_issue(name="viewer-bot", role="viewer")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    draft = {
        **REJECTING,
        "max_queriers_per_tenant": 2,
        "query_priority": {
            **REJECTING["query_priority"],
            "priorities": [
                {**REJECTING["query_priority"]["priorities"][0], "reserved_queriers": 1}
            ],
        },
    }
    (row,) = api.post("/api/v1/tenants/team/dry-run/", draft, format="json").json()["federated"]
    fed_now, fed_then = _serving_lines(html)[2:]
    assert (fed_now["serving"], fed_then["serving"]) == (
        row["serving"]["before"],
        row["serving"]["after"],
    )
    assert row["serving"]["after"]["reserved"]  # the draft's reservation, not an empty pair
