"""`runtime-config/`: the export loads in Cortex; what the import refuses at the top level.

Durations stored as numbers of seconds are exported as duration strings,
`?cortex_version=` leaves out the fields a named Cortex does not read, an
empty file and a misspelt `overrides:` are refused by name.
"""

from __future__ import annotations

import re

import pytest
import yaml

from api.store.models import ConfigRevision, Tenant
from scheduler_core.validation import parse_duration, tenant_limits_from_dict

URL = "/api/v1/runtime-config/"

# Every field kind, with durations as numbers of seconds (accepted, stored as written).
NUMERIC = """
overrides:
  team.payments:
    max_queriers_per_tenant: 4
    max_outstanding_requests_per_tenant: 100
    max_query_capacity: 0.5
    query_priority:
      enabled: true
      default_priority: 1
      priorities:
        - priority: 3
          reserved_queriers: 0.25
          query_attributes:
            - regex: "vip"
              time_window: {start: 3600, end: 0}
        - priority: 2
          query_attributes:
            - api_type: query_range
              time_range_limit: {min: 90, max: 86400}
              query_step_limit: {max: 60.5}
              user_agent_regex: "^Grafana"
              dashboard_uid: "payments"
              panel_id: 4
    query_rejection:
      enabled: true
      query_attributes:
        - time_window: {start: 604800}
          query_step_limit: {min: 0.001}
"""

STRINGS_FOR_NUMBERS = {
    "query_priority.priorities[0].time_window": {"start": "1h", "end": "0s"},
    "query_priority.priorities[1].time_range_limit": {"min": "1m30s", "max": "1d"},
    "query_priority.priorities[1].query_step_limit": {"max": "1m500ms"},
    "query_rejection.time_window": {"start": "1w"},
    "query_rejection.query_step_limit": {"min": "1ms"},
}


def _put(client, text: str, **headers: str):
    return client.put(URL, text, content_type="application/yaml", HTTP_IF_MATCH="*", **headers)


def _export(client, query: str = "", accept: str = "application/yaml"):
    return client.get(URL + query, HTTP_ACCEPT=accept)


def _pairs(block: dict) -> dict[str, dict]:
    """The duration pairs of NUMERIC's block, keyed as STRINGS_FOR_NUMBERS."""
    priority = [rule["query_attributes"][0] for rule in block["query_priority"]["priorities"]]
    rejection = block["query_rejection"]["query_attributes"][0]
    return {
        "query_priority.priorities[0].time_window": priority[0]["time_window"],
        "query_priority.priorities[1].time_range_limit": priority[1]["time_range_limit"],
        "query_priority.priorities[1].query_step_limit": priority[1]["query_step_limit"],
        "query_rejection.time_window": rejection["time_window"],
        "query_rejection.query_step_limit": rejection["query_step_limit"],
    }


def test_durations_stored_as_seconds_are_exported_as_duration_strings(editor_api):
    assert _put(editor_api, NUMERIC).status_code == 200
    block = yaml.safe_load(_export(editor_api).content)["overrides"]["team.payments"]
    assert _pairs(block) == STRINGS_FOR_NUMBERS


def test_the_json_export_writes_the_same_duration_strings(editor_api):
    _put(editor_api, NUMERIC)
    as_json = _export(editor_api, accept="application/json").json()
    as_yaml = yaml.safe_load(_export(editor_api).content)
    assert as_json == as_yaml


def test_the_exported_block_means_what_the_scheduler_runs(editor_api):
    _put(editor_api, NUMERIC)
    stored = Tenant.objects.get(tenant_id="team.payments").config
    exported = yaml.safe_load(_export(editor_api).content)["overrides"]["team.payments"]
    assert tenant_limits_from_dict(exported) == tenant_limits_from_dict(stored)


def test_the_tenant_api_still_answers_durations_as_written(editor_api):
    _put(editor_api, NUMERIC)
    body = editor_api.get("/api/v1/tenants/team.payments/").json()
    window = body["query_priority"]["priorities"][0]["query_attributes"][0]["time_window"]
    assert window == {"start": 3600, "end": 0}


def test_duration_strings_are_exported_as_written(editor_api):
    text = NUMERIC.replace("{start: 3600, end: 0}", "{start: 60m, end: '0'}")
    _put(editor_api, text)
    block = yaml.safe_load(_export(editor_api).content)["overrides"]["team.payments"]
    window = block["query_priority"]["priorities"][0]["query_attributes"][0]["time_window"]
    assert window == {"start": "60m", "end": "0"}
    assert parse_duration(window["start"]) == 3600


@pytest.mark.parametrize(
    ("version", "kept"),
    [
        ("1.15.3", {"max_queriers_per_tenant", "max_outstanding_requests_per_tenant"}),
        ("v1.16.1", {"max_queriers_per_tenant", "max_outstanding_requests_per_tenant"}),
        (
            "1.18",
            {"max_queriers_per_tenant", "max_outstanding_requests_per_tenant"}
            | {"query_priority", "query_rejection"},
        ),
        (
            "2.0.0",
            {"max_queriers_per_tenant", "max_outstanding_requests_per_tenant"}
            | {"query_priority", "query_rejection"},
        ),
    ],
)
def test_cortex_version_leaves_out_the_fields_that_version_does_not_read(editor_api, version, kept):
    _put(editor_api, NUMERIC)
    for accept in ("application/yaml", "application/json"):
        response = _export(editor_api, f"?cortex_version={version}", accept)
        assert response.status_code == 200, response.content
        block = yaml.safe_load(response.content)["overrides"]["team.payments"]
        assert set(block) == kept
    # The ETag stays the tenant set's version: the next import's If-Match.
    assert response["ETag"] == _export(editor_api)["ETag"]


def test_cortex_1_17_keeps_query_priority_rules_it_can_read(editor_api):
    text = NUMERIC.replace(
        """            - api_type: query_range
              time_range_limit: {min: 90, max: 86400}
              query_step_limit: {max: 60.5}
              user_agent_regex: "^Grafana"
              dashboard_uid: "payments"
              panel_id: 4
""",
        """            - regex: "slow"
              api_type: ""
""",
    )
    assert _put(editor_api, text).status_code == 200
    response = _export(editor_api, "?cortex_version=1.17")
    block = yaml.safe_load(response.content)["overrides"]["team.payments"]
    assert set(block) == {
        "max_queriers_per_tenant",
        "max_outstanding_requests_per_tenant",
        "query_priority",
    }
    rules = block["query_priority"]["priorities"]
    assert rules[0]["query_attributes"] == [
        {"regex": "vip", "time_window": {"start": "1h", "end": "0s"}}
    ]
    # An unset field 1.17 does not know is left out: it checked nothing.
    assert rules[1]["query_attributes"] == [{"regex": "slow"}]


def test_cortex_1_17_refuses_rather_than_widen_a_rule_it_cannot_read(editor_api):
    _put(editor_api, NUMERIC)
    response = _export(editor_api, "?cortex_version=1.17")
    assert response.status_code == 409
    assert response["Content-Type"] == "application/json"  # an error, not a YAML export
    (message,) = response.json()["cortex_version"]
    path = "overrides.team.payments.query_priority.priorities[1].query_attributes[0]"
    for field in ("api_type", "time_range_limit", "user_agent_regex", "panel_id"):
        assert f"{path}.{field}" in message


@pytest.mark.parametrize("value", ["1.14", "1.14.9", "0.7", "1", "1.15.3.1", "latest", "1.015"])
def test_a_cortex_version_before_1_15_or_not_a_version_is_400_naming_it(editor_api, value):
    _put(editor_api, NUMERIC)
    response = _export(editor_api, f"?cortex_version={value}")
    assert response.status_code == 400
    assert "from 1.15 on" in response.json()["cortex_version"][0]


def test_the_schema_lists_cortex_version_with_the_pattern_the_server_reads(viewer_api):
    response = viewer_api.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi")
    operation = yaml.safe_load(response.content)["paths"]["/api/v1/runtime-config/"]["get"]
    (parameter,) = [p for p in operation["parameters"] if p["name"] == "cortex_version"]
    assert parameter["in"] == "query"
    pattern = re.compile(parameter["schema"]["pattern"])
    # What the server takes (empty is absent), and what it refuses with a 400.
    for taken in ("", "1.15.3", "1.17", "v1.18.0", "2.0"):
        assert pattern.search(taken), taken
    for refused in ("1.14.9", "latest", "1.15.3.4", " 1.15"):
        assert not pattern.search(refused), refused
    assert "409" in operation["responses"]


@pytest.mark.parametrize("text", ["", "# a file of comments\n# only\n", "---\n", "null\n"])
def test_an_empty_file_is_refused_saying_it_needs_overrides(editor_api, text):
    _put(editor_api, "overrides:\n  t1: {max_queriers_per_tenant: 2}\n")
    response = _put(editor_api, text)
    assert response.status_code == 400
    (message,) = response.json()["non_field_errors"]
    assert "the file is empty" in message and "overrides:" in message
    assert list(Tenant.objects.values_list("tenant_id", flat=True)) == ["t1"]


@pytest.mark.parametrize("key", ["overides", "override", "Overrides", "overrrides"])
def test_a_misspelt_overrides_key_is_refused_naming_it(editor_api, key):
    _put(editor_api, "overrides:\n  t1: {max_queriers_per_tenant: 2}\n")
    revisions = ConfigRevision.objects.count()
    for text in (
        f"{key}:\n  t2: {{max_queriers_per_tenant: 3}}\n",
        f"overrides:\n  t1: {{max_queriers_per_tenant: 2}}\n{key}:\n  t2: {{}}\n",
    ):
        response = _put(editor_api, text)
        assert response.status_code == 400
        assert response.json() == {key: ["unknown top-level key; did you mean overrides?"]}
    assert ConfigRevision.objects.count() == revisions
    assert list(Tenant.objects.values_list("tenant_id", flat=True)) == ["t1"]


def test_other_top_level_sections_of_cortex_are_still_ignored_and_reported(editor_api):
    text = (
        "overrides:\n  t1: {max_queriers_per_tenant: 2}\n"
        "multi_kv_config: {mirror_enabled: false}\n"
        "ingester_stream_chunks_when_using_blocks: true\n"
        "ingester_limits: {max_inflight_push_requests: 30000}\n"
    )
    body = _put(editor_api, text).json()
    assert body["ignored_top_level"] == [
        "ingester_limits",
        "ingester_stream_chunks_when_using_blocks",
        "multi_kv_config",
    ]
