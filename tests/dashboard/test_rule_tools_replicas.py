"""The editor's dry-run box and the tenants list on a scaled-out service.

A dry run replays the answering replica's sample alone, and the list's
shares sum only the replicas whose counts could be read: each says whose
traffic it holds and whose it lacks, and a lone replica's says nothing of
replicas at all.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from api.cluster.replica_rules import PeerCounts
from api.store.models import Tenant
from api.wire import rule_reports
from dashboard import views_rules
from tests.dashboard.test_rule_tools import REJECTING, _post_fields, sampled

pytestmark = pytest.mark.django_db

URL = "/tenants/team/dry-run/"
UNREAD = PeerCounts(None, None)


def _scope(monkeypatch: pytest.MonkeyPatch, replica: str, others: list[str]) -> None:
    monkeypatch.setattr(
        rule_reports, "sample_scope", lambda: {"replica": replica, "other_replicas": others}
    )


def _box(client: Client, monkeypatch: pytest.MonkeyPatch, settings: Any, *queries: str) -> str:
    settings.CONFIG_IMPORT_IN_WORKER_PROCESS = False
    sampled(monkeypatch, *queries)
    return client.post(URL, _post_fields(REJECTING)).content.decode()


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_dry_run_box_names_whose_sample_it_replayed_and_whose_traffic_it_lacks(
    viewer_client: Client, team: Tenant, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    _scope(monkeypatch, "web-1", ["web-2", "web-3"])
    html = _box(viewer_client, monkeypatch, settings, "errors_total", "up")
    (scope,) = re.findall(r'<p class="help" id="dry-run-scope">(.*?)</p>', html)
    assert scope == (
        "Replica web-1's sample only: the traffic replicas web-2, web-3 received is not in it."
    )
    # The announced fact carries it too: a screen reader hears whose sample.
    assert "<dt>Sampled requests (replica web-1)</dt>" in html
    assert "this scheduler" not in _text(html)
    # A lone replica's sample is all the traffic: nothing is said of replicas.
    _scope(monkeypatch, "web-1", [])
    html = viewer_client.post(URL, _post_fields(REJECTING)).content.decode()
    assert 'id="dry-run-sample">2<' in html and "<dt>Sampled requests</dt>" in html
    assert "replica" not in _text(html).lower()


def test_one_other_replica_is_named_in_the_singular(
    viewer_client: Client, team: Tenant, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    _scope(monkeypatch, "web-1", ["web-2"])
    html = _box(viewer_client, monkeypatch, settings, "up")
    assert "the traffic replica web-2 received is not in it." in html


def test_an_empty_sample_says_whose_it_was_on_a_scaled_out_service(
    viewer_client: Client, team: Tenant, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    _scope(monkeypatch, "web-1", ["web-2"])
    html = _box(viewer_client, monkeypatch, settings)
    (empty,) = re.findall(r'<p class="muted" id="dry-run-empty">(.*?)</p>', html)
    assert empty == (
        "No recent traffic of this tenant was sampled on replica web-1 yet. "
        "The traffic replica web-2 received is not in its sample."
    )


def test_a_lone_replicas_empty_sample_says_nothing_of_replicas_or_this_scheduler(
    viewer_client: Client, team: Tenant, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    _scope(monkeypatch, "web-1", [])
    html = _box(viewer_client, monkeypatch, settings)
    (empty,) = re.findall(r'<p class="muted" id="dry-run-empty">(.*?)</p>', html)
    assert empty == "No recent traffic of this tenant was sampled yet."


def _counts_scope(monkeypatch: pytest.MonkeyPatch, scope: dict[str, Any]) -> None:
    monkeypatch.setattr(views_rules.rule_reports, "counts_scope", lambda peers: scope)


def test_the_list_names_the_replicas_its_shares_leave_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _counts_scope(monkeypatch, {"replicas_missing": ["web-2", "web-3"]})
    assert views_rules.shares_not_counted(UNREAD) == (
        "Not counted: web-2, web-3 (their counts are not in: not answering, or not read yet). "
        "The default shares leave their requests out."
    )
    _counts_scope(monkeypatch, {"replicas_missing": ["web-2"]})
    assert views_rules.shares_not_counted(UNREAD) == (
        "Not counted: web-2 (its counts are not in: not answering, or not read yet). "
        "The default shares leave its requests out."
    )


def test_the_list_says_so_when_the_peers_counts_could_not_be_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scope = {"replicas_missing": [], "replicas_note": rule_reports.COUNTS_UNREAD_NOTE}
    _counts_scope(monkeypatch, scope)
    said = views_rules.shares_not_counted(UNREAD)
    assert said == f"Partial shares: {rule_reports.COUNTS_UNREAD_NOTE}."


def test_a_lone_replicas_list_says_nothing_of_replicas(monkeypatch: pytest.MonkeyPatch) -> None:
    _counts_scope(monkeypatch, {"replicas_missing": []})
    assert views_rules.shares_not_counted(UNREAD) is None
