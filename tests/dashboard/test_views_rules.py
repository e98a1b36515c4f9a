"""The dry-run box tests the draft of whichever editor view posted it."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from api.store.config_yaml import tenant_block_yaml
from api.store.models import Tenant
from tests.dashboard.test_rule_tools import REJECTING, sampled

pytestmark = pytest.mark.django_db

URL = "/tenants/team/dry-run/"


def test_the_yaml_views_dry_run_tests_the_yaml_not_an_empty_form(
    viewer_client: Client, team: Tenant, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """The YAML view posts its text and no form inputs: read as a form, the
    draft had no rules and every sampled request "would drop to priority 0"."""
    settings.CONFIG_IMPORT_IN_WORKER_PROCESS = False
    sampled(monkeypatch, "errors_total", "up")
    text = tenant_block_yaml("team", REJECTING)
    html = viewer_client.post(URL, {"view": "yaml", "yaml": text}).content.decode()
    assert 'id="dry-run-sample">2<' in html
    assert 'id="dry-run-changed" class="big">0<' in html
    edited = text.replace("priority: 5", "priority: 7")
    html = viewer_client.post(URL, {"view": "yaml", "yaml": edited}).content.decode()
    assert 'id="dry-run-changed" class="big">1<' in html and "priority 7" in html


def test_a_dry_run_of_yaml_that_is_no_block_says_so(viewer_client: Client, team: Tenant) -> None:
    html = viewer_client.post(URL, {"view": "yaml", "yaml": "team: [unclosed"}).content.decode()
    assert "Fix the YAML first" in html


def test_a_dry_run_of_a_draft_with_errors_names_them(viewer_client: Client, team: Tenant) -> None:
    fields = {
        "query_priority.enabled": "on",
        "query_priority.priorities[0].priority": "high",
        "query_priority.priorities[0].query_attributes[0].regex": "errors",
    }
    html = viewer_client.post(URL, fields).content.decode()
    assert "Fix the rules first: rule 1 › priority: must be an integer" in html
