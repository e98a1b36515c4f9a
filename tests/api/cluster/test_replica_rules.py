"""Rule hit counts as replicas publish and read them: the counting age travels too."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from api.cluster.replica_rules import PEERS, ReplicaCounts, encode_counts, tenant_counts
from api.wire.rule_reports import rule_stats_body
from scheduler_core.model import PriorityDef, QueryAttribute, QueryPriority, TenantLimits
from scheduler_core.rejection import Verdict
from scheduler_core.rule_stats import RuleStats, limits_fingerprint
from tests.fakes import FakeClock

LIMITS = TenantLimits(
    query_priority=QueryPriority(
        enabled=True,
        priorities=(PriorityDef(priority=5, query_attributes=(QueryAttribute(regex="hot"),)),),
    )
)


@pytest.fixture
def peers() -> Iterator[object]:
    saved = (PEERS.own_id, PEERS.at, PEERS.tenants)
    yield PEERS
    PEERS.own_id, PEERS.at, PEERS.tenants = saved


def _stats_counted_for(seconds: float) -> RuleStats:
    clock = FakeClock(1_000.0)
    stats = RuleStats(clock)
    stats.record("t", LIMITS, Verdict(priority=5, rule_index=0, attribute_index=0))
    clock.now += seconds
    return stats


def test_a_published_record_carries_how_long_it_has_counted() -> None:
    body = json.loads(json.dumps(encode_counts(_stats_counted_for(42.04))))
    fingerprint, windows, age = body["t"]
    assert windows["version"][0] == 1 and age == 42.0


def test_local_and_peer_counts_keep_their_ages(peers: object) -> None:
    stats = _stats_counted_for(90)
    entry = encode_counts(_stats_counted_for(30))["t"]
    PEERS.own_id, PEERS.at, PEERS.tenants = "a", {"b": 500.0}, {"b": {"t": entry}}
    found = tenant_counts("t", stats.counts("t"), wall_now=501.0)
    assert [(r.replica, r.age) for r in found] == [("a", 90.0), ("b", 30.0)]


@pytest.mark.parametrize("raw", ["12", True, -1, float("nan"), float("inf"), None, [3]])
def test_a_peer_age_that_is_not_a_span_is_read_as_unknown(peers: object, raw: object) -> None:
    fingerprint, windows, _ = encode_counts(_stats_counted_for(30))["t"]
    PEERS.own_id, PEERS.at = "a", {"b": 500.0}
    PEERS.tenants = {"b": {"t": [fingerprint, windows, raw]}}
    (found,) = tenant_counts("t", None, wall_now=501.0)
    assert found.age is None and found.windows["version"][0] == 1


def test_a_peer_of_an_earlier_release_without_an_age_still_counts(peers: object) -> None:
    fingerprint, windows, _ = encode_counts(_stats_counted_for(30))["t"]
    PEERS.own_id, PEERS.at, PEERS.tenants = "a", {"b": 500.0}, {"b": {"t": [fingerprint, windows]}}
    (found,) = tenant_counts("t", None, wall_now=501.0)
    assert found.age is None and found.fingerprint == fingerprint


def test_the_body_reports_the_longest_counting_current_replica() -> None:
    windows = encode_counts(_stats_counted_for(1))["t"][1]
    current, older = limits_fingerprint(LIMITS), limits_fingerprint(TenantLimits())
    replicas = [
        ReplicaCounts("a", current, windows, 120.0),
        ReplicaCounts("b", current, windows, None),
        ReplicaCounts("c", older, windows, 7200.0),  # still on an older config: not summed
    ]
    assert rule_stats_body("t", 3, LIMITS, replicas)["counting_seconds"] == 120.0
    assert rule_stats_body("t", 3, LIMITS, replicas[1:])["counting_seconds"] is None


def test_a_tenant_quiet_for_an_hour_still_publishes_its_counts_since_the_version(
    peers: object,
) -> None:
    quiet = encode_counts(_stats_counted_for(3700.0))["t"]
    assert set(quiet[1]) == {"version"}  # its 5 m and 1 h windows are zeros, left out
    PEERS.own_id, PEERS.at, PEERS.tenants = "a", {"b": 500.0}, {"b": {"t": quiet}}

    body = rule_stats_body("t", 3, LIMITS, tenant_counts("t", None, wall_now=501.0))

    assert body["total"] == {"5m": 0, "1h": 0, "version": 1}
    assert [row["replica"] for row in body["replicas"]] == ["b"]
