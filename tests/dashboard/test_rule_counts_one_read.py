"""rule-stats and the tenants list's shares: sums and scope from one read of peers' counts.

The summaries pass replaces the peers' counts on the loop while a view
works in its thread. Read once for the sums and again for the scope, an
exchange landing between the two gave this replica's counts alone under a
scope saying every peer was counted: part of the traffic passed for all.
"""

from __future__ import annotations

import html
import re
import time
from typing import Any

import pytest

from api.cluster import replica_board, replica_rules
from api.cluster.replica_board import ReplicaBoard
from api.cluster.replica_rules import PEERS
from api.store import services
from api.wire import rule_reports
from scheduler_core.dry_run import limits_of
from scheduler_core.rule_stats import limits_fingerprint
from tests.api.cluster.replica_summaries import encoded

pytestmark = pytest.mark.django_db


@pytest.fixture
def unread(monkeypatch: pytest.MonkeyPatch, settings: Any) -> ReplicaBoard:
    """Replica "a" of a scaled-out service, before its first exchange of counts."""
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    board = ReplicaBoard("a")
    monkeypatch.setattr(replica_board, "_board", board)
    monkeypatch.setattr(PEERS, "own_id", "a")
    monkeypatch.setattr(PEERS, "at", None)
    monkeypatch.setattr(PEERS, "tenants", None)
    return board


def _exchange(board: ReplicaBoard) -> None:
    """One summaries pass: peer b publishes, and counted 7 requests of team-a."""
    now = time.time()
    board.accept([encoded("b", now)], [0.0], now)
    board.note_registry({"a": now, "b": now}, now)
    windows = {"5m": [7, 7], "1h": [7, 7], "version": [7, 7]}
    fingerprint = limits_fingerprint(limits_of({}))
    PEERS.at, PEERS.tenants = {"b": now}, {"b": {"team-a": [fingerprint, windows, 30.0]}}


def _lands_after(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, board: ReplicaBoard):
    original = getattr(module, name)

    def then_the_exchange(*args: Any, **kwargs: Any) -> Any:
        found = original(*args, **kwargs)
        _exchange(board)
        return found

    monkeypatch.setattr(module, name, then_the_exchange)


def test_rule_stats_read_after_an_exchange_count_the_peer(viewer_client, unread):
    _exchange(unread)
    body = viewer_client.get("/api/v1/tenants/team-a/rule-stats/").json()
    assert (body["total"]["1h"], body["replicas_missing"]) == (7, [])


def test_rule_stats_an_exchange_lands_in_the_middle_of_say_the_peers_are_unread(
    viewer_client, unread, monkeypatch
):
    _lands_after(monkeypatch, rule_reports, "federated_counts", unread)
    body = viewer_client.get("/api/v1/tenants/team-a/rule-stats/").json()
    assert body["total"]["1h"] == 0
    assert body["replicas_note"] == rule_reports.COUNTS_UNREAD_NOTE


def test_the_tenants_list_an_exchange_lands_in_the_middle_of_says_what_its_shares_leave_out(
    viewer_client, unread, monkeypatch
):
    services.tenant_put(
        tenant_id="team-a", config={}, expected_version=None, author=None, source="cli"
    )
    _lands_after(monkeypatch, replica_rules, "tenant_counts", unread)
    page = viewer_client.get("/tenants/").content.decode()
    (said,) = re.findall(r'<p class="help warn-text" id="shares-not-counted">(.*?)</p>', page)
    assert html.unescape(said).startswith(f"Partial shares: {rule_reports.COUNTS_UNREAD_NOTE}.")
