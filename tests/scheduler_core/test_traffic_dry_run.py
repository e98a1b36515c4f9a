"""The recent-traffic sample (bounds, what it keeps) and the dry run replayed over it."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.admission_log import AdmissionLog
from scheduler_core.classify import classify
from scheduler_core.dry_run import replay, reservations, serving_of
from scheduler_core.model import (
    PriorityDef,
    QueryAttribute,
    QueryPriority,
    QueryRejection,
    TenantLimits,
    TimeRange,
)
from scheduler_core.queue import RequestQueue
from scheduler_core.rejection import judge
from scheduler_core.rule_stats import RuleStats
from scheduler_core.rules import QueryInfo
from scheduler_core.traffic import ENTRY_OVERHEAD, TENANT_OVERHEAD, TrafficSample

NOW = 1_700_000_000.0


def _info(query: str = "up", api_type: str = "query", **extra: Any) -> QueryInfo:
    return QueryInfo(query=query, api_type=api_type, start=NOW, end=NOW, **extra)


def test_a_tenant_keeps_only_its_newest_requests() -> None:
    sample = TrafficSample(per_tenant=3, max_bytes=10**6)
    for n in range(10):
        sample.record("t", _info(f"q{n}"), NOW + n, "ingester", 0, False)
    assert [r.query for r in sample.requests("t")] == ["q7", "q8", "q9"]


def test_one_tenants_flood_stays_within_the_byte_cap_and_leaves_others_their_share() -> None:
    cap = 40 * (ENTRY_OVERHEAD + 10) + 2 * TENANT_OVERHEAD
    sample = TrafficSample(per_tenant=1000, max_bytes=cap)
    for n in range(10):
        sample.record("quiet", _info(f"quiet{n:05d}"), NOW, "ingester", 0, False)
    for n in range(5000):
        sample.record("flood", _info(f"flood{n:05d}"), NOW + n, "ingester", 0, False)
        assert sample.bytes <= cap
    assert len(sample.requests("quiet")) == 10
    flood = sample.requests("flood")
    assert flood and flood[-1].query == "flood04999"
    kept = sum(r.size for t in sample.tenants() for r in sample.requests(t))
    assert kept + TENANT_OVERHEAD * len(sample.tenants()) == sample.bytes


def test_many_tenants_never_exceed_the_byte_cap() -> None:
    cap = 100 * ENTRY_OVERHEAD
    sample = TrafficSample(per_tenant=50, max_bytes=cap)
    for n in range(3000):
        sample.record(f"t{n % 300}", _info("x" * (n % 97)), NOW, "ingester", 0, False)
        assert sample.bytes <= cap


def test_times_are_kept_relative_to_arrival_and_headers_as_matched() -> None:
    sample = TrafficSample()
    info = QueryInfo(
        query="up",
        api_type="query_range",
        start=NOW - 3600,
        end=NOW - 60,
        step=15.0,
        user_agent="grafana/11",
        panel_id="4",
    )
    sample.record("t", info, NOW, "ingester", 3, False)
    (entry,) = sample.requests("t")
    assert (entry.start, entry.end, entry.step) == (-3600, -60, 15.0)
    assert entry.absolute_start() == NOW - 3600
    assert entry.header_map() == {"User-Agent": "grafana/11", "X-Panel-Id": "4"}


def test_the_sample_follows_no_request_into_the_queue() -> None:
    # Waits, service times and rates are the traffic recorder's: the sample
    # costs the runtime's observer fan-out nothing per request.
    hooks = ("on_enqueued", "on_rejected", "on_dispatched", "on_completed", "on_cancelled")
    sample = TrafficSample()
    assert [hook for hook in (*hooks, "on_failed") if hasattr(sample, hook)] == []


def test_a_rejected_request_is_sampled_as_rejected() -> None:
    sample = TrafficSample()
    sample.record("t", _info(), NOW, "ingester", 0, True)
    assert sample.requests("t")[0].rejected


# --- dry run -------------------------------------------------------------------


RULES = TenantLimits(
    query_priority=QueryPriority(
        True, 0, [PriorityDef(5, 1, [QueryAttribute(regex="rate")]), PriorityDef(1, 0, [])]
    )
)


def _sampled(*queries: str) -> list[tuple[Any, ...]]:
    sample = TrafficSample()
    for n, query in enumerate(queries):
        sample.record("t", _info(query), NOW + n, "ingester", 0, False)
    return sample.rows("t")


def test_the_report_sorts_each_request_into_exactly_one_bucket() -> None:
    draft = TenantLimits(
        query_priority=QueryPriority(True, 3, RULES.query_priority.priorities),
        query_rejection=QueryRejection(True, [QueryAttribute(regex="^bad")]),
    )
    rows = _sampled("rate(x[5m])", "up", "up", "bad_query", "rate(y[1m])")
    report = replay(rows, RULES, draft)
    assert report["sample"] == 5
    assert report["unchanged"] == 2  # both rate queries stay at 5
    assert report["rejected"] == 1
    assert report["changed"] == [{"from": 0, "to": 3, "count": 2, "examples": ["up"]}]
    # What each config admits, by priority: the saved one all five, the draft
    # all but the rejected one.
    assert report["by_priority"] == {"before": {"5": 2, "0": 3}, "after": {"5": 2, "3": 2}}


def test_reservations_before_and_after_follow_cortexs_rule() -> None:
    queriers = ["q1", "q2", "q3", "q4"]
    assert reservations("t", RULES, queriers) == {"5": ["q1"]}
    more = TenantLimits(
        query_priority=QueryPriority(True, 0, [PriorityDef(5, 2, [QueryAttribute(regex="rate")])])
    )
    assert reservations("t", more, queriers) == {"5": ["q1", "q2"]}
    assert reservations("t", TenantLimits(), queriers) == {}


@settings(max_examples=150, deadline=None)
@given(
    queriers=st.integers(min_value=1, max_value=9),
    max_queriers=st.integers(min_value=0, max_value=10),
    capacity=st.sampled_from([0.0, 0.2, 0.5, 0.75, 1.0]),
    shares=st.lists(st.sampled_from([0.0, 0.3, 0.5, 1.0, 2.0]), min_size=1, max_size=3),
)
def test_reservations_and_shards_are_the_ones_the_live_queue_makes(
    queriers: int, max_queriers: int, capacity: float, shares: list[float]
) -> None:
    # Every shard limit counts, Loki's max_query_capacity as well as
    # max_queriers: a dry run that ignored one named queriers outside the shard.
    names = [f"q{i}" for i in range(queriers)]
    priorities = [
        PriorityDef(9 - i, share, [QueryAttribute(regex="x")]) for i, share in enumerate(shares)
    ]
    limits = TenantLimits(
        max_queriers=max_queriers,
        max_query_capacity=capacity,
        query_priority=QueryPriority(True, 0, priorities),
    )
    queue = RequestQueue()
    for name in names:
        queue.connect_querier(name)
    queue.set_tenant_limits("t", limits)
    live: dict[str, list[str]] = {}
    for r in queue.serving("t").reservations:
        live.setdefault(str(r.priority), []).append(r.querier_id)
    assert reservations("t", limits, names) == live
    assert serving_of("t", limits, names) == queue.serving("t")  # the shard too


_REGEXES = st.sampled_from(["rate", "sum", "^up", "x", ".*", ".+", 'job="a"'])
_WINDOWS = st.sampled_from([None, TimeRange(3600.0, None), TimeRange(None, 1800.0)])
_LIMITS = st.sampled_from([None, TimeRange(None, 3600.0), TimeRange(600.0, None)])


@st.composite
def _attributes(draw: Any) -> QueryAttribute:
    attr = QueryAttribute(
        regex=draw(st.one_of(st.none(), _REGEXES)),
        time_window=draw(_WINDOWS),
        api_type=draw(st.sampled_from([None, "query", "query_range", "series"])),
        time_range_limit=draw(_LIMITS),
        user_agent_regex=draw(st.sampled_from([None, "grafana"])),
        panel_id=draw(st.sampled_from([None, "4"])),
    )
    return attr if attr != QueryAttribute() else QueryAttribute(regex="x")


@st.composite
def _tenant_limits(draw: Any) -> TenantLimits:
    levels = draw(st.lists(st.integers(-3, 9), max_size=3, unique=True))
    priorities = [
        PriorityDef(p, 0, draw(st.lists(_attributes(), min_size=1, max_size=2))) for p in levels
    ]
    return TenantLimits(
        query_priority=QueryPriority(draw(st.booleans()), draw(st.integers(-1, 2)), priorities),
        query_rejection=QueryRejection(
            draw(st.booleans()), draw(st.lists(_attributes(), max_size=2))
        ),
    )


_QUERIES = st.sampled_from(
    ["up", "rate(x[5m])", "sum(rate(x[1h]))", 'up{job="a"}', "max_over_time(up[2h:])", ""]
)


@st.composite
def _requests(draw: Any) -> dict[str, Any]:
    api_type = draw(st.sampled_from(["query", "query_range", "series"]))
    end = NOW - draw(st.sampled_from([0.0, 60.0, 1800.0, 7200.0]))
    start = end - draw(st.sampled_from([0.0, 300.0, 3600.0, 6 * 3600.0]))
    headers = draw(st.sampled_from([{}, {"User-Agent": "grafana/11"}, {"X-Panel-Id": "4"}]))
    return {
        "query": draw(_QUERIES),
        "api_type": api_type,
        "start": start,
        "end": end,
        "step": 15.0 if api_type == "query_range" else None,
        "headers": headers,
        "arrived": NOW + draw(st.floats(0, 3000)),
    }


def _live(limits: TenantLimits, request: dict[str, Any]) -> int | str:
    """What a door decides: classify, then judge, at the request's arrival."""
    found = classify(
        query=request["query"],
        api_type=request["api_type"],
        start=request["start"],
        end=request["end"],
        step=request["step"],
        headers=request["headers"],
        now=request["arrived"],
    )
    verdict = judge(limits, found.info, request["arrived"])
    return "rejected" if verdict.rejected else verdict.priority


@settings(max_examples=60, deadline=None)
@given(_tenant_limits(), _tenant_limits(), st.lists(_requests(), min_size=1, max_size=25))
def test_the_dry_run_equals_what_the_scheduler_assigns_after_save(
    saved: TenantLimits, draft: TenantLimits, traffic: list[dict[str, Any]]
) -> None:
    log = AdmissionLog(RuleStats(lambda: 0.0), TrafficSample())
    for request in traffic:  # the live scheduler, under the saved config
        found = classify(
            query=request["query"],
            api_type=request["api_type"],
            start=request["start"],
            end=request["end"],
            step=request["step"],
            headers=request["headers"],
            now=request["arrived"],
        )
        verdict = judge(saved, found.info, request["arrived"])
        log.record("t", saved, verdict, found.info, found.component, request["arrived"])
    report = replay(log.traffic.rows("t"), saved, draft)

    # Save: the same requests now meet the draft.
    before = [_live(saved, r) for r in traffic]
    after = [_live(draft, r) for r in traffic]
    rejected = sum(1 for a in after if a == "rejected")
    unchanged = sum(1 for b, a in zip(before, after, strict=True) if a != "rejected" and a == b)
    changed = Counter(
        (b, a) for b, a in zip(before, after, strict=True) if a != "rejected" and a != b
    )
    assert report["sample"] == len(traffic)
    assert (report["rejected"], report["unchanged"]) == (rejected, unchanged)
    assert {(c["from"], c["to"]): c["count"] for c in report["changed"]} == dict(changed)


def test_tenants_that_come_and_go_count_their_own_records_against_the_cap() -> None:
    """A request or two from each of many tenants: the tenants' records are
    most of the memory, so the cap counts them, and a tenant trimmed empty
    gives its record's bytes back."""
    cap = 100 * (TENANT_OVERHEAD + ENTRY_OVERHEAD + 10)
    sample = TrafficSample(per_tenant=1000, max_bytes=cap)
    for n in range(5000):
        sample.record(f"t{n:05d}", _info("up"), NOW + n, "ingester", 0, False)
        assert sample.bytes <= cap
    assert 90 <= len(sample.tenants()) <= 100
    kept = sum(r.size for t in sample.tenants() for r in sample.requests(t))
    assert kept + TENANT_OVERHEAD * len(sample.tenants()) == sample.bytes
