"""`AdmissionLog`: counts and samples every judged request, and reports refusals."""

from __future__ import annotations

from scheduler_core.admission_log import AdmissionLog
from scheduler_core.model import TenantLimits
from scheduler_core.rejection import Verdict
from scheduler_core.rules import QueryInfo

INFO = QueryInfo(query="up", api_type="query", start=None, end=None, step=None)


def test_only_a_request_a_rejection_rule_refused_is_reported_with_its_tenant() -> None:
    refused: list[str] = []
    log = AdmissionLog(refused=refused.append)

    log.record("a", TenantLimits(), Verdict(priority=3), INFO, "ingester", 0.0)
    log.record("a|b", TenantLimits(), Verdict(priority=0, rejected_by=0), INFO, "ingester", 0.0)

    assert refused == ["a|b"]
    assert log.stats.tenants() == ["a", "a|b"]
