"""Which replicas a rule-stats answer, a dry run and a `recent` simulation cover.

rule-stats sums the peers' counts read through Redis; a peer whose counts
are not in the sums (hung, killed, not read yet, Redis unreachable) must be
named, or part of the traffic reads as all of it. The sample is this
replica's alone, and the answer says so by naming it and the others.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from api.cluster import replica_board, replica_rules
from api.cluster.replica_board import ReplicaBoard
from api.cluster.replica_rules import PEERS, ReplicaCounts
from api.wire import rule_reports
from scheduler_core.model import PriorityDef, QueryAttribute, QueryPriority, TenantLimits
from scheduler_core.rule_stats import limits_fingerprint
from tests.api.cluster.replica_summaries import WALL, encoded

LIMITS = TenantLimits(
    query_priority=QueryPriority(
        enabled=True,
        priorities=(PriorityDef(priority=5, query_attributes=(QueryAttribute(regex="hot"),)),),
    )
)


@pytest.fixture
def board(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[ReplicaBoard]:
    """Replica "a" of a scaled-out service whose peers "b" and "c" published at WALL."""
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    board = ReplicaBoard("a")
    monkeypatch.setattr(replica_board, "_board", board)
    board.accept([encoded("b", WALL), encoded("c", WALL)], [0.0, 0.0], WALL)
    board.note_registry({"a": WALL, "b": WALL, "c": WALL}, WALL)
    saved = (PEERS.own_id, PEERS.at, PEERS.tenants)
    PEERS.own_id, PEERS.at, PEERS.tenants = "a", {"b": WALL, "c": WALL}, {"b": {}, "c": {}}
    yield board
    PEERS.own_id, PEERS.at, PEERS.tenants = saved


def test_rule_stats_name_no_replica_while_every_peer_s_counts_are_fresh(
    board: ReplicaBoard,
) -> None:
    assert rule_reports.counts_scope(WALL + 1) == {"replicas_missing": []}


def test_rule_stats_name_a_peer_whose_counts_went_stale_while_it_still_publishes(
    board: ReplicaBoard,
) -> None:
    PEERS.at = {"b": WALL, "c": WALL - replica_rules.STALE_SECONDS - 1}
    assert rule_reports.counts_scope(WALL) == {"replicas_missing": ["c"]}


def test_rule_stats_name_a_peer_that_stopped_publishing_once_its_counts_are_stale(
    board: ReplicaBoard,
) -> None:
    """Killed or hung: the board marks it down; its last counts age out, then it is named."""
    later = WALL + replica_rules.STALE_SECONDS + 1
    board.accept([encoded("b", later)], [0.0], later)
    board.note_registry({"a": later, "b": later, "c": WALL}, later)
    PEERS.at = {"b": later, "c": WALL}
    assert rule_reports.counts_scope(later) == {"replicas_missing": ["c"]}


def test_rule_stats_name_a_peer_whose_counts_were_not_read_yet(board: ReplicaBoard) -> None:
    PEERS.at = {"b": WALL}
    assert rule_reports.counts_scope(WALL) == {"replicas_missing": ["c"]}


def test_rule_stats_name_every_known_peer_and_say_why_while_redis_is_unreachable(
    board: ReplicaBoard,
) -> None:
    # What the summaries loop does when a Redis call fails.
    board.lost_redis()
    replica_rules.forget_peers()
    assert rule_reports.counts_scope(WALL + 1) == {
        "replicas_missing": ["b", "c"],
        "replicas_note": rule_reports.COUNTS_UNREAD_NOTE,
    }


def test_rule_stats_say_peers_were_not_read_before_any_peer_is_known(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """Redis unreachable since start: no peer to name, but the counts are not the service's."""
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    monkeypatch.setattr(replica_board, "_board", ReplicaBoard("a"))
    monkeypatch.setattr(PEERS, "at", None)
    assert rule_reports.counts_scope(WALL) == {
        "replicas_missing": [],
        "replicas_note": rule_reports.COUNTS_UNREAD_NOTE,
    }


def test_a_lone_replica_s_rule_stats_name_nothing(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.REDIS_URL = ""
    monkeypatch.setattr(replica_board, "_board", ReplicaBoard("a"))
    monkeypatch.setattr(PEERS, "at", None)
    assert rule_reports.counts_scope(WALL) == {"replicas_missing": []}


def test_a_peer_that_withdrew_is_not_missing(board: ReplicaBoard) -> None:
    """Stopped gracefully: its traffic and counts left with it, nothing is missing."""
    board.accept([encoded("b", WALL + 1)], [0.0], WALL + 1)
    board.note_registry({"a": WALL + 1, "b": WALL + 1}, WALL + 1)
    PEERS.at = {"b": WALL + 1}
    assert rule_reports.counts_scope(WALL + 1) == {"replicas_missing": []}


def test_a_restarted_replica_s_row_says_it_counted_only_since_its_restart() -> None:
    """Its counts reset: summed once each, and its own span says why its share is small."""
    fingerprint = limits_fingerprint(LIMITS)
    a = ReplicaCounts(
        "a", fingerprint, {"5m": [30, 0, 30], "1h": [90, 0, 90], "version": [90, 0, 90]}, 1800.0
    )
    b = ReplicaCounts(
        "b", fingerprint, {"5m": [4, 4, 0], "1h": [4, 4, 0], "version": [4, 4, 0]}, 12.0
    )
    body = rule_reports.rule_stats_body("t", 3, LIMITS, [a, b])
    assert body["total"] == {"5m": 34, "1h": 94, "version": 94}
    assert body["counting_seconds"] == 1800.0
    assert [
        (r["replica"], r["counting_seconds"], r["total"]["version"]) for r in body["replicas"]
    ] == [
        ("a", 1800.0, 90),
        ("b", 12.0, 4),
    ]


def test_a_dry_run_s_sample_names_this_replica_and_every_other_one(board: ReplicaBoard) -> None:
    # "c" hung: its traffic is just as absent from this replica's sample.
    later = WALL + replica_board.STALE_SECONDS + 1
    board.accept([encoded("b", later)], [0.0], later)
    board.note_registry({"a": later, "b": later, "c": WALL}, later)
    assert rule_reports.sample_scope(later) == {"replica": "a", "other_replicas": ["b", "c"]}


def test_a_sample_before_the_peers_are_heard_of_says_others_may_hold_more(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    monkeypatch.setattr(replica_board, "_board", ReplicaBoard("a"))
    assert rule_reports.sample_scope(WALL) == {
        "replica": "a",
        "other_replicas": [],
        "replicas_note": rule_reports.SAMPLE_UNHEARD_NOTE,
    }
    settings.REDIS_URL = ""  # a lone replica holds all of its traffic
    assert rule_reports.sample_scope(WALL) == {"replica": "a", "other_replicas": []}
