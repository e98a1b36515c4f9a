"""Recorded traffic: every proposed tenant the window does not know is named, not only the first."""

from __future__ import annotations

import pickle

import pytest

from scheduler_core.model import QueueConfig, TenantLimits
from scheduler_core.whatif import (
    SpecError,
    WorkloadInvalid,
    check_proposed_tenants,
    run_whatif,
    workload_errors,
)
from scheduler_core.whatif_model import ConfigSet, Kind, Workload, WorkloadError


def _workload(*tenants: str) -> Workload:
    kinds = [Kind(t, hint="ingester") for t in tenants]
    return Workload(
        kinds=kinds,
        times=[0] * len(kinds),
        kind_of=list(range(len(kinds))),
        quantiles=[0.0] * len(kinds),
        seconds=[0] * len(kinds),
        service=lambda component, u, second: 1000,
        fleet=[("q-1", 1)],
        description={"kind": "recent"},
    )


def test_each_unknown_proposed_tenant_gets_its_own_error_in_one_refusal() -> None:
    workload = _workload("acme", "beta|gamma")
    live = ConfigSet(QueueConfig(), {"configured": TenantLimits()})
    added = {"nobody1": TenantLimits(), "acmee": TenantLimits()}
    proposed = ConfigSet(live.config, {**live.limits, **added})
    with pytest.raises(WorkloadInvalid) as refused:
        # nobody2's override is removed (null): only the request names it.
        check_proposed_tenants(workload, live, proposed, named=["nobody1", "nobody2", "acmee"])
    errors = refused.value.errors
    assert [e.prefix for e in errors] == [
        ("proposed", "tenants", "acmee"),
        ("proposed", "tenants", "nobody1"),
        ("proposed", "tenants", "nobody2"),
    ]
    assert all(e.path == "" for e in errors)
    assert errors[0].message.startswith("no tenant 'acmee' is configured or sent traffic")
    assert errors[0].message.endswith("tenants here: acme, beta, configured, gamma")
    # Still a WorkloadError naming the first, for a caller that reads only one.
    assert isinstance(refused.value, WorkloadError)
    assert (refused.value.prefix, refused.value.path) == (("proposed", "tenants", "acmee"), "")
    assert str(refused.value) == errors[0].message
    assert workload_errors(refused.value) == errors


def test_run_whatif_refuses_every_unknown_tenant_before_it_runs_anything() -> None:
    workload = _workload("acme")
    live = ConfigSet(QueueConfig(), {})
    proposed = ConfigSet(live.config, {"x1": TenantLimits(), "x2": TenantLimits()})
    with pytest.raises(WorkloadInvalid) as refused:
        run_whatif(workload, live, proposed, seed=1)
    assert [e.prefix[-1] for e in refused.value.errors] == ["x1", "x2"]


def test_a_single_workload_error_reads_as_one_error_at_its_path() -> None:
    error = WorkloadError("knobs.queriers", "no querier was connected")
    assert workload_errors(error) == [SpecError((), "knobs.queriers", "no querier was connected")]


def test_the_errors_survive_the_pipe_to_and_from_the_worker_process() -> None:
    found = [SpecError(("proposed", "tenants", "a.b"), "", "no tenant 'a.b'")]
    sent = [(e.prefix, e.path, e.message) for e in workload_errors(WorkloadInvalid(found))]
    assert pickle.loads(pickle.dumps(sent)) == [
        (("proposed", "tenants", "a.b"), "", "no tenant 'a.b'")
    ]
