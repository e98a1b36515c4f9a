"""The tenants list on a scaled-out service names the replicas its shares leave out."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard import views_rules

pytestmark = pytest.mark.django_db


def test_the_tenants_list_names_the_replicas_its_default_shares_leave_out(
    viewer_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        views_rules.rule_reports, "counts_scope", lambda peers: {"replicas_missing": ["web-2"]}
    )
    html = viewer_client.get("/tenants/").content.decode()
    assert 'id="shares-not-counted">Not counted: web-2 (its counts' in html
    monkeypatch.setattr(
        views_rules.rule_reports, "counts_scope", lambda peers: {"replicas_missing": []}
    )
    assert "shares-not-counted" not in viewer_client.get("/tenants/").content.decode()
