"""Rule hit counts: per rule and attribute, default, rejection, windows, versions."""

from __future__ import annotations

from scheduler_core.model import (
    PriorityDef,
    QueryAttribute,
    QueryPriority,
    QueryRejection,
    TenantLimits,
)
from scheduler_core.rejection import Verdict
from scheduler_core.rule_stats import RuleStats, limits_fingerprint

LIMITS = TenantLimits(
    query_priority=QueryPriority(
        True,
        0,
        [
            PriorityDef(5, 0, [QueryAttribute(regex="a"), QueryAttribute(regex="b")]),
            PriorityDef(2, 0, [QueryAttribute(regex="c")]),
        ],
    ),
    query_rejection=QueryRejection(True, [QueryAttribute(regex="bad")]),
)
RULE0_ATTR1 = Verdict(5, 0, 1)
RULE1_ATTR0 = Verdict(2, 1, 0)
DEFAULT = Verdict(0)
REJECTED = Verdict(0, rejected_by=0)


class Clock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_each_request_counts_once_for_its_attribute_its_rule_and_the_total() -> None:
    stats = RuleStats(Clock(1000.0))
    for verdict in (RULE0_ATTR1, RULE0_ATTR1, RULE1_ATTR0, DEFAULT, REJECTED):
        stats.record("t", LIMITS, verdict)
    counts = stats.counts("t")
    assert counts is not None
    assert counts.attribute(0, 0)["version"] == 0
    assert counts.attribute(0, 1) == {"5m": 2, "1h": 2, "version": 2}
    assert counts.priority(0)["1h"] == 2
    assert counts.priority(1)["1h"] == 1
    assert counts.default()["1h"] == 1
    assert counts.rejection(0)["1h"] == 1
    assert counts.total() == {"5m": 5, "1h": 5, "version": 5}


def test_with_under_five_minutes_counted_every_window_counts_every_hit() -> None:
    # The record begins mid-minute of the wall clock: the partial first
    # minute dropped out of "5m" when the windows were wall-clock minutes.
    clock = Clock(1075.0)
    stats = RuleStats(clock)
    for second in range(0, 271, 3):  # 4.5 min of hits
        clock.now = 1075.0 + second
        stats.record("t", LIMITS, DEFAULT if second % 2 else RULE0_ATTR1)
    counts = stats.counts("t")
    assert counts is not None and counts.age == 270.0
    total = counts.total()
    assert total["5m"] == total["1h"] == total["version"] == 91
    assert counts.default()["5m"] == counts.default()["version"] == 45


def test_a_window_counts_the_steps_that_began_at_most_its_span_ago() -> None:
    clock = Clock(0.0)
    stats = RuleStats(clock)
    stats.record("t", LIMITS, DEFAULT)  # 5m step 0: [0, 5)
    clock.now = 4.0
    stats.record("t", LIMITS, DEFAULT)  # still step 0
    clock.now = 5.0
    stats.record("t", LIMITS, RULE0_ATTR1)  # step 1: [5, 10)
    clock.now = 300.0  # step 0 began exactly 5 min ago: still in
    assert stats.counts("t").total() == {"5m": 3, "1h": 3, "version": 3}  # type: ignore[union-attr]
    clock.now = 300.5  # step 0 began more than 5 min ago: both its hits are out
    assert stats.counts("t").total() == {"5m": 1, "1h": 3, "version": 3}  # type: ignore[union-attr]
    clock.now = 305.0
    assert stats.counts("t").total()["5m"] == 1  # type: ignore[union-attr]
    clock.now = 305.5
    assert stats.counts("t").total()["5m"] == 0  # type: ignore[union-attr]


def test_the_hour_keeps_minute_steps_from_when_counting_began() -> None:
    clock = Clock(30.0)
    stats = RuleStats(clock)
    stats.record("t", LIMITS, DEFAULT)  # 1h step 0: [30, 90)
    clock.now = 89.0
    stats.record("t", LIMITS, DEFAULT)
    clock.now = 90.0
    stats.record("t", LIMITS, DEFAULT)  # step 1
    clock.now = 30.0 + 3600.0
    assert stats.counts("t").total()["1h"] == 3  # type: ignore[union-attr]
    clock.now = 30.0 + 3600.0 + 1.0
    assert stats.counts("t").total() == {"5m": 0, "1h": 1, "version": 3}  # type: ignore[union-attr]
    clock.now = 30.0 + 2 * 3600.0  # long after: a new hit rolls the old steps out
    stats.record("t", LIMITS, DEFAULT)
    assert stats.counts("t").total() == {"5m": 1, "1h": 1, "version": 4}  # type: ignore[union-attr]


def test_a_new_config_version_starts_fresh_counts_but_the_counters_keep_growing() -> None:
    stats = RuleStats(Clock(0.0))
    stats.record("t", LIMITS, RULE0_ATTR1)
    stats.record("t", LIMITS, DEFAULT)
    edited = TenantLimits(query_priority=QueryPriority(True, 1, LIMITS.query_priority.priorities))
    stats.record("t", edited, DEFAULT)
    counts = stats.counts("t")
    assert counts is not None and counts.fingerprint == limits_fingerprint(edited)
    assert counts.total()["version"] == 1
    assert stats.matches_total() == {("t", "5", "1"): 1, ("t", "default", ""): 2}


def test_a_change_undone_by_a_rollback_with_no_request_between_starts_the_counts_again() -> None:
    clock = Clock(0.0)
    stats = RuleStats(clock)
    for _ in range(5):
        stats.record("t", LIMITS, DEFAULT)
    edited = TenantLimits(query_priority=QueryPriority(True, 1, LIMITS.query_priority.priorities))
    stats.applied("t", edited)  # no request under it here
    clock.now = 3 * 3600.0
    stats.applied("t", LIMITS)  # rolled back
    stats.record("t", LIMITS, DEFAULT)

    counts = stats.counts("t")
    assert counts is not None
    assert counts.total()["version"] == 1
    assert counts.age == 0.0
    assert stats.matches_total() == {("t", "default", ""): 6}  # the counter never goes back


def test_limits_applied_unchanged_keep_the_counts() -> None:
    stats = RuleStats(Clock(0.0))
    stats.record("t", LIMITS, DEFAULT)
    stats.applied("t", LIMITS)
    stats.applied("other", LIMITS)  # no record: nothing to start
    assert stats.counts("t").total()["version"] == 1  # type: ignore[union-attr]
    assert stats.tenants() == ["t"]


def test_an_equal_config_is_the_same_version() -> None:
    stats = RuleStats(Clock(0.0))
    stats.record("t", LIMITS, DEFAULT)
    copy = TenantLimits(
        query_priority=QueryPriority(True, 0, list(LIMITS.query_priority.priorities)),
        query_rejection=QueryRejection(True, list(LIMITS.query_rejection.query_attributes)),
    )
    stats.record("t", copy, DEFAULT)
    assert stats.counts("t").total()["version"] == 2  # type: ignore[union-attr]


def test_rejections_are_counted_per_tenant_with_the_query_rejection_reason() -> None:
    stats = RuleStats(Clock(0.0))
    stats.record("t", LIMITS, REJECTED)
    stats.record("t", LIMITS, REJECTED)
    stats.record("u", LIMITS, REJECTED)
    assert stats.rejected_total() == {("t", "query_rejection"): 2, ("u", "query_rejection"): 1}
    # A rejected request took no priority, so it is no rule match either.
    assert stats.matches_total() == {}


def test_a_tenant_without_requests_has_no_counts() -> None:
    assert RuleStats(Clock()).counts("nobody") is None


def test_priority_disabled_requests_count_as_default() -> None:
    stats = RuleStats(Clock(0.0))
    stats.record("t", TenantLimits(), Verdict(0))
    assert stats.matches_total() == {("t", "default", ""): 1}


def test_forgetting_a_tenant_drops_its_live_and_retired_counts_only() -> None:
    stats = RuleStats(Clock(0.0))
    stats.record("t", LIMITS, RULE0_ATTR1)
    stats.record("t", LIMITS, REJECTED)
    edited = TenantLimits(query_priority=QueryPriority(True, 1, LIMITS.query_priority.priorities))
    stats.record("t", edited, DEFAULT)  # the first version's counts are retired now
    stats.record("u", LIMITS, DEFAULT)
    stats.forget("t")
    assert stats.counts("t") is None
    assert stats.matches_total() == {("u", "default", ""): 1}
    assert stats.rejected_total() == {}
    assert stats.tenants() == ["u"]
