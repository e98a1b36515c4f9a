"""What admission remembers of each request: rule hit counts and the traffic sample.

Both doors (websocket and Cortex gRPC) call `record` once per request right
after judging it, before enqueueing it (or answering 422), so the counts and
the sample see rejected requests too. A few increments and one small object
per request: cheap enough for the hot path (see tests/load/rules_bench.py).
"""

from __future__ import annotations

from collections.abc import Callable

from scheduler_core.model import TenantLimits
from scheduler_core.rejection import Verdict
from scheduler_core.rule_stats import RuleStats
from scheduler_core.rules import QueryInfo
from scheduler_core.traffic import TrafficSample

__all__ = ["AdmissionLog"]


class AdmissionLog:
    """Rule statistics plus the recent-traffic sample, fed together."""

    def __init__(
        self,
        stats: RuleStats | None = None,
        traffic: TrafficSample | None = None,
        refused: Callable[[str], None] | None = None,
    ) -> None:
        self.stats = stats if stats is not None else RuleStats()
        self.traffic = traffic if traffic is not None else TrafficSample()
        # Told the tenant of each request a rejection rule refused: such a
        # request never reaches the runtime, so no runtime event says that
        # its tenant was active (the metrics' idle-tenant janitor needs to).
        self._refused = refused

    def record(
        self,
        tenant_id: str,
        limits: TenantLimits,
        verdict: Verdict,
        info: QueryInfo,
        component: str,
        arrived: float,
    ) -> None:
        """Count and sample one judged request (`arrived`: unix seconds)."""
        self.stats.record(tenant_id, limits, verdict)
        self.traffic.record(tenant_id, info, arrived, component, verdict.priority, verdict.rejected)
        if verdict.rejected_by is not None and self._refused is not None:
            self._refused(tenant_id)
