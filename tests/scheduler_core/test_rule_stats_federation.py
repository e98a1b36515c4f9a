"""A federated ID's counts, read by each tenant it names: the rules of that tenant that judged it.

Admission counts a request of `a|b` once, under the whole ID and its
combined limits; `member_share` says which of those counts are `a`'s. The
check here is against judging each tenant's own rules apart: a request is
`a`'s rejection when `a`'s rules reject it and no earlier tenant's do, and
`a`'s priority when `a` is the first tenant with priority enabled.
"""

from __future__ import annotations

import random

from scheduler_core.classify import query_info
from scheduler_core.dry_run import replay
from scheduler_core.federation import combined_limits
from scheduler_core.model import (
    PriorityDef,
    QueryAttribute,
    QueryPriority,
    QueryRejection,
    TenantLimits,
)
from scheduler_core.rejection import judge
from scheduler_core.rule_stats import RuleStats, member_share, naming, slot_layout
from scheduler_core.rules import QueryInfo
from scheduler_core.traffic import TrafficSample

WORDS = ["errors", "latency", "up", "expensive", "forbidden", "slow", "cpu"]


def _priority(*rules: tuple[int, list[str]]) -> QueryPriority:
    defs = [PriorityDef(p, 0, [QueryAttribute(regex=r) for r in regexes]) for p, regexes in rules]
    return QueryPriority(True, 0, defs)


def _rejection(*regexes: str, enabled: bool = True) -> QueryRejection:
    return QueryRejection(enabled, [QueryAttribute(regex=r) for r in regexes])


TENANTS = {
    # No priority: its rejection rules come first in `a|b|c`.
    "a": TenantLimits(query_rejection=_rejection("forbidden", "slow")),
    # The first with priority enabled: its rules judge every federated ID it is in.
    "b": TenantLimits(
        query_priority=_priority((5, ["errors", "latency"]), (3, ["cpu"])),
        query_rejection=_rejection("expensive"),
    ),
    "c": TenantLimits(
        query_priority=_priority((9, ["up"])),
        query_rejection=_rejection("cpu", enabled=False),
    ),
}


def _info(query: str, at: float) -> QueryInfo:
    return query_info(query=query, api_type="query", start=at, end=at, step=None, headers={})


def _own_slot(org_id: str, member: str, query: str, at: float) -> int | None:
    """The member's slot for one request, judging each tenant's rules apart; None: not its."""
    tenants = org_id.split("|")
    info = _info(query, at)
    own = TENANTS[member]
    for tenant in tenants:
        alone = judge(TenantLimits(query_rejection=TENANTS[tenant].query_rejection), info, at)
        if alone.rejected_by is not None:
            return 2 + alone.rejected_by if tenant == member else None
    owner = next((t for t in tenants if TENANTS[t].query_priority.enabled), None)
    if owner is None:
        return 1
    if owner != member:
        return None
    verdict = judge(TenantLimits(query_priority=own.query_priority), info, at)
    if verdict.rule_index is None or verdict.attribute_index is None:
        return 1
    return slot_layout(own)[1][verdict.rule_index] + verdict.attribute_index


def test_each_tenant_reads_exactly_the_federated_counts_its_rules_decided() -> None:
    rng = random.Random(7)
    for org_id in ("a|b", "a|b|c", "a|c", "b|c"):
        combined = combined_limits([TENANTS[t] for t in org_id.split("|")])
        stats = RuleStats(lambda: 0.0)
        queries = [" ".join(rng.sample(WORDS, rng.randint(1, 2))) for _ in range(300)]
        for n, query in enumerate(queries):
            stats.record(org_id, combined, judge(combined, _info(query, 1e9 + n), 1e9 + n))
        counts = stats.counts(org_id)
        assert counts is not None
        for member in org_id.split("|"):
            size = slot_layout(TENANTS[member])[0]
            expected = [0] * size
            for n, query in enumerate(queries):
                slot = _own_slot(org_id, member, query, 1e9 + n)
                if slot is not None:
                    expected[slot] += 1
            expected[0] = len(queries)
            folded = member_share(org_id, member, TENANTS).fold(counts.windows, size)
            assert folded["version"] == expected, (org_id, member)


def test_the_share_names_whose_priority_rules_judged_the_id() -> None:
    assert member_share("a|c", "a", TENANTS).priority_from == "c"
    assert member_share("a|b|c", "c", TENANTS).priority_from == "b"
    only_rejection = {"a": TENANTS["a"], "x": TenantLimits()}
    assert member_share("a|x", "x", only_rejection).priority_from is None


def test_naming_finds_the_federated_ids_of_a_tenant_and_no_lookalike() -> None:
    ids = ["a", "a|b", "ab|c", "b|a|c", "b|c", "x|a"]
    assert naming("a", ids) == ["a|b", "b|a|c", "x|a"]


def test_a_replay_counts_federated_requests_under_their_combined_limits_and_lists_them() -> None:
    draft_b = TenantLimits(query_priority=_priority((7, ["latency"])))
    before = combined_limits([TENANTS["a"], TENANTS["b"]])
    after = combined_limits([TENANTS["a"], draft_b])
    sample = TrafficSample()
    for n, query in enumerate(["errors", "latency", "forbidden", "expensive"]):
        info = _info(query, 1e9 + n)
        verdict = judge(before, info, 1e9 + n)
        sample.record("a|b", info, 1e9 + n, "ingester", verdict.priority, verdict.rejected)
    own_rows = [(1e9, "up", "query", 0.0, 0.0, None, (), None)]
    report = replay(own_rows, TENANTS["b"], draft_b, [("a|b", sample.rows("a|b"), before, after)])
    assert (report["sample"], report["rejected"], report["unchanged"]) == (5, 1, 1)
    (federated,) = report["federated"]
    assert (federated["org_id"], federated["sample"], federated["rejected"]) == ("a|b", 4, 1)
    changed = {(c["from"], c["to"]): c["examples"] for c in federated["changed"]}
    assert changed == {(5, 0): ["errors"], (5, 7): ["latency"], ("rejected", 0): ["expensive"]}
