"""The tenant editor's rejection section, dry-run box, hit counts, and the list's share."""

from __future__ import annotations

import json
import re
from html import unescape
from typing import Any

import pytest
from django.test import Client

from api.rest.offload import ImportWorkerDied
from api.store.models import Tenant
from api.wire import rule_reports
from dashboard import views_rules
from dashboard.forms import EditorAction, apply_action, editor_model, tenant_config_from_post
from scheduler_core.admission_log import AdmissionLog
from scheduler_core.classify import query_info
from scheduler_core.rejection import judge
from scheduler_core.rule_stats import RuleStats
from scheduler_core.validation import tenant_limits_from_dict, validate_tenant_config

pytestmark = pytest.mark.django_db

REJECTING: dict[str, Any] = {
    "query_priority": {
        "enabled": True,
        "default_priority": 0,
        "priorities": [{"priority": 5, "query_attributes": [{"regex": "errors"}]}],
    },
    "query_rejection": {"enabled": True, "query_attributes": [{"regex": "expensive"}]},
}


def _post_fields(config: dict[str, Any]) -> dict[str, str]:
    """The editor's inputs for a block, named by validation path, as a browser sends them."""
    fields = {"query_priority.default_priority": "0", "query_priority.enabled": "on"}
    for i, rule in enumerate(config["query_priority"]["priorities"]):
        fields[f"query_priority.priorities[{i}].priority"] = str(rule["priority"])
        for j, attr in enumerate(rule["query_attributes"]):
            for key, value in attr.items():
                fields[f"query_priority.priorities[{i}].query_attributes[{j}].{key}"] = value
    rejection = config.get("query_rejection")
    if rejection:
        fields["query_rejection.present"] = "1"
        if rejection["enabled"]:
            fields["query_rejection.enabled"] = "on"
        for j, attr in enumerate(rejection["query_attributes"]):
            for key, value in attr.items():
                fields[f"query_rejection.query_attributes[{j}].{key}"] = value
    return fields


def test_the_rejection_section_round_trips_through_the_form() -> None:
    assert tenant_config_from_post(_post_fields(REJECTING)) == REJECTING


def test_a_form_without_rejection_inputs_leaves_the_block_out() -> None:
    posted = tenant_config_from_post({"query_priority.default_priority": "0"})
    assert "query_rejection" not in posted


def test_rejection_attributes_are_added_and_removed_by_their_buttons() -> None:
    draft: dict[str, Any] = {}
    apply_action(draft, EditorAction("add-reject-attr"))
    apply_action(draft, EditorAction("add-reject-attr"))
    assert draft["query_rejection"]["query_attributes"] == [{}, {}]
    apply_action(draft, EditorAction("remove-reject-attr:0"))
    assert draft["query_rejection"]["query_attributes"] == [{}]


def test_rejection_errors_are_placed_on_their_inputs() -> None:
    config = {"query_rejection": {"enabled": True, "query_attributes": [{"regex": "("}]}}
    model = editor_model(config, validate_tenant_config(config))
    (attr,) = model["rejection"]["attributes"]
    regex = next(t for t in attr["texts"] if t["name"].endswith(".regex"))
    assert regex["errors"] and model["unplaced"] == []


def test_the_editor_shows_the_rejection_rules_and_hit_count_slots(
    editor_client: Client, team: Tenant
) -> None:
    html = editor_client.get("/tenants/team/").content.decode()
    assert 'name="query_rejection.query_attributes[0].regex" value="expensive"' in html
    assert 'id="query_rejection.enabled" name="query_rejection.enabled" checked' in html
    for key in ("rule-0", "rule-0-attr-0", "reject-0", "default"):
        assert f'data-hits="{key}"' in html
    assert 'data-rule-stats="/api/v1/tenants/team/rule-stats/"' in html
    assert "Test against recent traffic" in html


def test_the_explain_box_says_which_rejection_attribute_would_reject(
    viewer_client: Client, team: Tenant
) -> None:
    data = {
        **_post_fields(REJECTING),
        "explain_query": "sum(rate(expensive_total[5m]))",
        "explain_api_type": "query_range",
        "explain_start": "1h",
        "explain_end": "0s",
        "explain_step": "30s",
    }
    html = viewer_client.post("/tenants/team/explain/", data).content.decode()
    assert "Would be rejected by attribute 1" in html


def sampled(monkeypatch: pytest.MonkeyPatch, *queries: str) -> None:
    """Team's recent traffic as the saved rules judged it, with three queriers connected."""
    saved = tenant_limits_from_dict(REJECTING)
    log = AdmissionLog(RuleStats(lambda: 0.0))
    for n, query in enumerate(queries):
        info = query_info(
            query=query, api_type="query", start=1e9 + n, end=1e9 + n, step=None, headers={}
        )
        log.record("team", saved, judge(saved, info, 1e9 + n), info, "ingester", 1e9 + n)
    monkeypatch.setattr(
        rule_reports, "sample_rows", lambda ids=None: {"team": log.traffic.rows("team")}
    )
    monkeypatch.setattr(rule_reports, "connected_queriers", lambda: ["q1", "q2", "q3"])


def federated_sampled(monkeypatch: pytest.MonkeyPatch, org_id: str, *queries: str) -> None:
    """`org_id`'s recent traffic (a federated ID naming team), as team's saved rules judged it."""
    saved = tenant_limits_from_dict(REJECTING)
    log = AdmissionLog(RuleStats(lambda: 0.0))
    for n, query in enumerate(queries):
        info = query_info(query=query, api_type="query", start=1e9, end=1e9, step=None, headers={})
        log.record(org_id, saved, judge(saved, info, 1e9), info, "ingester", 1e9 + n)
    monkeypatch.setattr(
        rule_reports, "federated_sample_rows", lambda tenant_id: {org_id: log.traffic.rows(org_id)}
    )


def test_the_dry_run_box_tests_the_unsaved_form_and_saves_nothing(
    viewer_client: Client, team: Tenant, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.CONFIG_IMPORT_IN_WORKER_PROCESS = False  # the service test runs the worker
    sampled(monkeypatch, "errors_total", "up", "expensive_total")
    draft = {**REJECTING, "query_rejection": {"enabled": False, "query_attributes": []}}
    data = {**_post_fields(draft), "query_rejection.present": "1"}
    html = viewer_client.post("/tenants/team/dry-run/", data).content.decode()
    assert 'id="dry-run-sample">3<' in html
    assert 'id="dry-run-changed" class="big">1<' in html
    assert "rejected (422)" in html and "expensive_total" in html
    assert Tenant.objects.get(tenant_id="team").config == REJECTING


def test_the_dry_run_box_carries_who_would_serve_the_tenant_now_and_with_the_form(
    viewer_client: Client, team: Tenant, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.CONFIG_IMPORT_IN_WORKER_PROCESS = False
    sampled(monkeypatch, "errors_total", "up", "down")
    fields = {
        **_post_fields(REJECTING),
        "max_queriers_per_tenant": "2",
        "query_priority.priorities[0].reserved_queriers": "1",
    }
    html = viewer_client.post("/tenants/team/dry-run/", fields).content.decode()
    lines = re.findall(r'<p class="dry-run-serving"([^>]*)>', html)
    attrs = [dict(re.findall(r'data-([a-z]+)="([^"]*)"', line)) for line in lines]
    assert [a["label"] for a in attrs] == ["Now", "With the form"]
    now, then = (json.loads(unescape(a["serving"])) for a in attrs)
    assert now == {"shard": None, "queriers": 3, "reserved": []} and "below" not in attrs[0]
    assert len(then["shard"]) == 2 and then["reserved"] == [[5, [then["shard"][0]]]]
    # "up" and "down" stay at the default priority 0, below the reserved 5.
    assert (attrs[1]["below"], attrs[1]["sample"], attrs[1]["tenant"]) == ("2", "3", "team")


def test_the_tenants_list_shows_the_default_priority_share(
    viewer_client: Client, team: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    limits = tenant_limits_from_dict(REJECTING)
    stats = RuleStats(lambda: 0.0)
    for verdict in [
        judge(
            limits,
            query_info(query=q, api_type="query", start=1.0, end=1.0, step=None, headers={}),
            1.0,
        )
        for q in ("errors", "up", "up", "x")
    ]:
        stats.record("team", limits, verdict)
    monkeypatch.setattr(
        views_rules.rule_reports,
        "local_counts_many",
        lambda ids: {"team": stats.counts("team")},
    )
    html = viewer_client.get("/tenants/").content.decode()
    assert '75% <span class="muted">of 4</span>' in html


def test_the_dry_run_box_lists_federated_requests_under_their_own_org_id(
    viewer_client: Client, team: Tenant, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.CONFIG_IMPORT_IN_WORKER_PROCESS = False
    sampled(monkeypatch, "up")
    # other|team: other has no block, so team's rules are the combined limits'.
    federated_sampled(monkeypatch, "other|team", "errors_total", "expensive_total")
    draft = {**REJECTING, "query_rejection": {"enabled": False, "query_attributes": []}}
    data = {**_post_fields(draft), "query_rejection.present": "1"}
    html = viewer_client.post("/tenants/team/dry-run/", data).content.decode()
    assert 'id="dry-run-sample">3<' in html
    (row,) = re.findall(r'<table class="dry-run-federated">.*?</table>', html, re.S)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    assert cells[:4] == ["other|team", "2", "1", "0"]
    assert "expensive_total" in cells[4] and "errors_total" not in cells[4]


def test_the_dry_run_box_says_its_worker_died_instead_of_a_server_error(
    viewer_client: Client, team: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    def died(tenant_id: str, draft: Any) -> None:
        raise ImportWorkerDied("the dry-run worker process exited before it answered")

    monkeypatch.setattr(views_rules, "dry_run_report", died)
    answer = viewer_client.post("/tenants/team/dry-run/", _post_fields(REJECTING))
    assert answer.status_code == 200
    assert "the dry-run worker process exited before it answered" in answer.content.decode()
