"""The schema's operations read as sentences in Swagger UI and ReDoc; their IDs do not move."""

from __future__ import annotations

from drf_spectacular.generators import SchemaGenerator

# Clients generated from the schema name their methods after these: a contract.
OPERATION_IDS = {
    "index_retrieve",
    "explain_create",
    "queriers_retrieve",
    "queue_retrieve",
    "queue_cancel",
    "queue_requests_list",
    "queue_requests_retrieve",
    "queue_requests_cancel",
    "queue_usage_retrieve",
    "recording_retrieve",
    "revisions_list",
    "revisions_retrieve",
    "revisions_rollback",
    "revisions_compare",
    "runtime_config_retrieve",
    "runtime_config_update",
    "settings_retrieve",
    "settings_patch",
    "simulate_create",
    "simulate_run_retrieve",
    "simulate_run_destroy",
    "tenants_list",
    "tenants_retrieve",
    "tenants_put",
    "tenants_patch",
    "tenants_destroy",
    "tenants_dry_run",
    "tenants_rule_stats",
    "tenants_yaml_retrieve",
    "tenants_yaml_parse",
}


def _operations() -> list[dict[str, object]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return [operation for item in schema["paths"].values() for operation in item.values()]


def test_the_operation_ids_are_the_published_ones() -> None:
    assert {operation["operationId"] for operation in _operations()} == OPERATION_IDS


def test_every_operation_has_a_short_summary_in_words_not_its_id() -> None:
    summaries = {}
    for operation in _operations():
        summary = operation.get("summary")
        assert isinstance(summary, str) and summary, operation["operationId"]
        assert "_" not in summary and len(summary) <= 50, summary
        assert summary[0].isupper() and not summary.endswith("."), summary
        summaries.setdefault(summary, operation["operationId"])
    # Two headings alike would leave a reader of ReDoc's menu guessing.
    assert len(summaries) == len(OPERATION_IDS)
