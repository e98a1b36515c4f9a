"""`explain/` with `matchers`: several `match[]` selectors, judged as the door judges them."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from api.store.models import Tenant
from api.wire.grpc.admission import Admission
from api.wire.grpc.clients import get_request
from scheduler_core.model import QueueConfig, TenantLimits
from scheduler_core.pb import schedulerpb_pb2 as pb
from scheduler_core.validation import tenant_limits_from_dict

pytestmark = pytest.mark.django_db

NOW = 1_700_000_040.0
URL = "/api/v1/explain/"
# Anchored: it matches the selector `up` on its own, never the joined "down,up".
ANCHORED: dict[str, Any] = {
    "query_priority": {
        "enabled": True,
        "default_priority": 0,
        "priorities": [{"priority": 7, "query_attributes": [{"regex": "^up$"}]}],
    }
}
SELECTORS = ["down", "up"]


class _Host:
    def __init__(self, limits: TenantLimits) -> None:
        self.limits, self.config = limits, QueueConfig()

    def tenant_limits(self, tenant_id: str) -> TenantLimits:
        return self.limits


def _door_priority(selectors: list[str]) -> int:
    params = [("start", str(NOW - 600)), ("end", str(NOW))]
    params += [("match[]", s) for s in selectors]
    msg = pb.FrontendToScheduler(
        type=pb.ENQUEUE,
        queryID=1,
        userID="team",
        httpRequest=get_request("/api/v1/series", params, {}),
    )
    host = _Host(tenant_limits_from_dict(ANCHORED))
    return Admission(host, wall_clock=lambda: NOW).build(msg, "fe:1").priority


def _explain(client: Any, **extra: Any) -> Any:
    body = {"tenant": "team", "api_type": "series", "start": NOW - 600, "end": NOW, "now": NOW}
    return client.post(URL, {**body, **extra}, format="json")


@pytest.fixture
def team() -> None:
    Tenant.objects.create(tenant_id="team", config=ANCHORED)


def test_several_selectors_are_judged_each_on_its_own_as_the_door_judges_them(
    viewer_api: Any, team: None
) -> None:
    got = _explain(viewer_api, matchers=SELECTORS).json()
    assert (got["priority"], got["rule_index"], got["attribute_index"]) == (7, 0, 0)
    assert got["priority"] == _door_priority(SELECTORS)
    assert "match[] selector 2 of 2" in got["reasons"][0]["message"]


def test_the_joined_text_alone_is_one_selector_and_gets_another_answer(
    viewer_api: Any, team: None
) -> None:
    assert _explain(viewer_api, query="down,up").json()["priority"] == 0


def test_the_query_may_repeat_the_join_the_queue_listing_shows(viewer_api: Any, team: None) -> None:
    got = _explain(viewer_api, query="down,up", matchers=SELECTORS)
    assert got.status_code == 200 and got.json()["priority"] == 7


def test_an_empty_list_is_a_call_without_selectors(viewer_api: Any, team: None) -> None:
    got = _explain(viewer_api, matchers=[]).json()
    assert got["priority"] == 0 == _door_priority([])
    assert "no match[] selectors" in got["reasons"][0]["message"]


@pytest.mark.parametrize(
    ("extra", "field", "words"),
    [
        ({"matchers": "up"}, "matchers", "list"),
        ({"matchers": ["up", 5]}, "matchers", "must be a string"),
        ({"matchers": [{"a": 1}]}, "matchers", "must be a string"),
        ({"matchers": ["x"] * 1001}, "matchers", "1000"),
        ({"matchers": ["x" * 40000, "y" * 40000]}, "matchers", "65536"),
        ({"matchers": ["up"], "api_type": "query"}, "matchers", "query call has no match[]"),
        ({"matchers": ["up"], "api_type": "query_range"}, "matchers", "query_range"),
        ({"matchers": ["up"], "query": "down"}, "query", "their ',' join"),
    ],
)
def test_bad_matchers_are_a_400_naming_the_field(
    viewer_api: Any, team: None, extra: dict[str, Any], field: str, words: str
) -> None:
    response = _explain(viewer_api, **extra)
    assert response.status_code == 400, response.content
    assert words in str(response.json()[field])


def test_the_schema_documents_matchers_as_a_bounded_list_of_text(viewer_api: Any) -> None:
    response = viewer_api.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi")
    fields = yaml.safe_load(response.content)["components"]["schemas"]["ExplainRequest"]
    matchers = fields["properties"]["matchers"]
    assert matchers["type"] == "array" and matchers["maxItems"] == 1000
    assert matchers["items"]["type"] == "string" and matchers["nullable"] is True
