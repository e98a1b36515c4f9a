"""`explain/`: component, data-select range, priority and the reason for every rule."""

from __future__ import annotations

import copy

from tests.examples import SEED_TENANT_CONFIG

URL = "/api/v1/explain/"
NOW = 1_700_000_000.0
HOUR = 3600.0

SEED_RULES = SEED_TENANT_CONFIG


def _explain(client, **request):
    response = client.post(URL, {"tenant": "t1", "now": NOW, **request}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_the_first_matching_rule_wins_and_earlier_rules_say_why_not(editor_api):
    editor_api.put("/api/v1/tenants/t1/", SEED_RULES, format="json")
    body = _explain(editor_api, query="max(up)", start=NOW - HOUR)
    assert body["priority"] == 2 and body["source"] == "rule"
    assert (body["rule_index"], body["attribute_index"]) == (1, 0)
    assert body["component"] == "ingester"
    # Prometheus 3 reads (t - 5m, t]: the range starts 1 ms after t - lookback.
    assert body["select_range"] == {"start": NOW - HOUR - 300 + 0.001, "end": NOW - HOUR}
    first, second, third = body["rules"]
    assert first["evaluated"] and not first["matched"]
    assert "not found in query" in first["reasons"][0]["message"]
    assert second["matched"]
    assert not third["evaluated"] and third["reasons"] == []


def test_old_data_goes_to_the_store_gateway_and_falls_to_the_default(editor_api):
    editor_api.put("/api/v1/tenants/t1/", SEED_RULES, format="json")
    body = _explain(editor_api, query="max(up)", start=NOW - 48 * HOUR)
    assert body["component"] == "store-gateway"
    assert body["priority"] == 0 and body["source"] == "default"
    assert all(rule["evaluated"] and not rule["matched"] for rule in body["rules"])


def test_a_range_query_uses_its_range_step_and_headers(editor_api):
    rules = {
        "query_priority": {
            "enabled": True,
            "priorities": [
                {
                    "priority": 9,
                    "query_attributes": [
                        {
                            "api_type": "query_range",
                            "query_step_limit": {"max": "1m"},
                            "dashboard_uid": "ops",
                        }
                    ],
                }
            ],
        }
    }
    editor_api.put("/api/v1/tenants/t1/", rules, format="json")
    body = _explain(
        editor_api,
        query="rate(http_requests_total[5m])",
        api_type="query_range",
        start="2023-11-14T21:13:20Z",
        end=NOW,
        step="30s",
        headers={"X-Dashboard-Uid": "ops"},
    )
    assert body["priority"] == 9
    # 21:13:20Z is now-1h; [5m] widens it, less the excluded millisecond.
    assert body["select_range"]["start"] == NOW - HOUR - 300 + 0.001


def test_a_draft_block_is_explained_without_saving_it(editor_api):
    draft = copy.deepcopy(SEED_RULES)
    body = _explain(editor_api, query="special_query", tenant_config=draft)
    assert body["priority"] == 3 and body["tenant_configured"] is True
    assert editor_api.get("/api/v1/tenants/t1/").status_code == 404


def test_an_unknown_tenant_gets_the_defaults(editor_api):
    body = _explain(editor_api, query="up")
    assert body["tenant_configured"] is False
    assert body["priority"] == 0 and body["source"] == "disabled"
    assert body["rules"] == []


def test_bad_input_is_400_with_field_paths(editor_api):
    draft = {
        "query_priority": {"priorities": [{"priority": 1, "query_attributes": [{"regex": "("}]}]}
    }
    response = editor_api.post(URL, {"tenant": "t1", "tenant_config": draft}, format="json")
    assert response.status_code == 400
    regex = response.json()["tenant_config"]["query_priority"]["priorities"]["0"]
    assert "RE2" in regex["query_attributes"]["0"]["regex"][0]
    response = editor_api.post(
        URL, {"tenant": "t1", "bogus": 1, "start": "yesterday", "step": "5x"}, format="json"
    )
    errors = response.json()
    # Every problem at once: the unknown field does not hide the others.
    assert errors["bogus"] == ["unknown field"] and set(errors) == {"bogus", "start", "step"}
    errors = editor_api.post(
        URL, {"tenant": "t1", "start": "yesterday", "step": "5x"}, format="json"
    ).json()
    assert "RFC 3339" in errors["start"][0] and "duration" in errors["step"][0]
    assert "required" in editor_api.post(URL, {}, format="json").json()["tenant"][0]


def test_a_number_where_text_belongs_is_400_naming_the_field(editor_api):
    """DRF read 5 as the tenant "5" and 1 as the query "1"."""
    body = {"tenant": 5, "query": 1, "headers": {"User-Agent": 2}}
    errors = editor_api.post(URL, body, format="json").json()
    assert errors == {
        "tenant": ["must be a string, got int"],
        "query": ["must be a string, got int"],
        "headers": {"User-Agent": ["must be a string, got int"]},
    }


def test_one_header_given_twice_in_two_cases_is_400(editor_api):
    """Header names have no case: the answer depended on which spelling came last."""
    body = {"tenant": "t1", "headers": {"X-Panel-Id": "1", "x-panel-id": "2"}}
    errors = editor_api.post(URL, body, format="json").json()
    assert errors == {"headers": ["'X-Panel-Id' and 'x-panel-id' are the same header"]}


def test_a_federated_org_id_is_explained_under_its_tenants_combined_limits(editor_api):
    editor_api.put("/api/v1/tenants/t1/", SEED_RULES, format="json")
    editor_api.put("/api/v1/tenants/t2/", {"max_queriers_per_tenant": 2}, format="json")
    alone = _explain(editor_api, query="max(up)", start=NOW - HOUR)
    body = _explain(editor_api, tenant="t2|t1", query="max(up)", start=NOW - HOUR)
    # The rules of the first tenant with priority enabled, as both doors take them.
    assert (body["priority"], body["source"]) == (alone["priority"], "rule")
    assert body["tenant_configured"] is True
    assert body["queriers"]["max_queriers_per_tenant"] == 2


def test_a_federated_id_is_explained_normalised_as_the_doors_queue_it(editor_api):
    body = editor_api.post(URL, {"tenant": "t2|t1|t2", "query": "up"}, format="json").json()
    assert body["tenant"] == "t1|t2"


def test_an_org_id_the_doors_refuse_is_400_in_their_words(editor_api):
    for tenant, words in (("t 1", "unsupported character ' '"), ("t1||t2", "is empty")):
        response = editor_api.post(URL, {"tenant": tenant}, format="json")
        assert response.status_code == 400
        assert words in response.json()["tenant"][0]


def test_a_federated_id_over_max_federated_tenants_is_400_as_at_the_doors(editor_api):
    etag = editor_api.get("/api/v1/settings/")["ETag"]
    patch = {"max_federated_tenants": 2}
    assert (
        editor_api.patch("/api/v1/settings/", patch, format="json", HTTP_IF_MATCH=etag).status_code
        == 200
    )
    assert editor_api.post(URL, {"tenant": "t1|t2"}, format="json").status_code == 200
    response = editor_api.post(URL, {"tenant": "t1|t2|t3"}, format="json")
    assert response.status_code == 400
    assert response.json()["tenant"] == ["the org ID names 3 tenants; at most 2 may be federated"]
