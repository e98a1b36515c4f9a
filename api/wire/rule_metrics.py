"""Rule hit and rejection counters, read from the admission log at scrape time.

`cortex_query_scheduler_priority_rule_matches_total{user, priority, attribute}`
counts requests per priority rule attribute (`attribute` is its index in the
rule; a request given the default priority counts as `priority="default",
attribute=""`). `cortex_query_frontend_rejected_queries_total{user, reason}`
(the name operators' dashboards know from Cortex and Mimir) counts requests a
`query_rejection` rule refused, `reason="query_rejection"`. Both come from
`scheduler_core.rule_stats.RuleStats`, which keeps lifetime totals across
config changes, so the counters never go down.
"""

from __future__ import annotations

from typing import Any

from api.wire import runtime_host
from api.wire.exposition import RowFamily
from api.wire.loop_metrics import Build, LoopBoundCollector

__all__ = ["RuleStatsCollector", "rule_families"]


def rule_families(stats: Any) -> list[RowFamily]:
    """The two counter families of one `RuleStats` (empty ones when None)."""
    # Rows, not samples: both have a series per tenant.
    matches = RowFamily(
        "cortex_query_scheduler_priority_rule_matches_total",
        'Requests matched per tenant, priority and attribute index (default: attribute "").',
        "counter",
        ("user", "priority", "attribute"),
    )
    rejected = RowFamily(
        "cortex_query_frontend_rejected_queries_total",
        "Queries rejected by the tenant's query_rejection rules (HTTP 422).",
        "counter",
        ("user", "reason"),
    )
    if stats is not None:
        for labels, count in sorted(stats.matches_total().items()):
            matches.add_metric(labels, count)
        for labels, count in sorted(stats.rejected_total().items()):
            rejected.add_metric(labels, count)
    return [matches, rejected]


class RuleStatsCollector(LoopBoundCollector):
    """This replica's rule counters (each replica counts what it admitted)."""

    def take(self) -> Build:
        stats = runtime_host.get_host().admission_log.stats if runtime_host.started() else None
        families = rule_families(stats)  # read here: the loop records into these counts
        return lambda: families
