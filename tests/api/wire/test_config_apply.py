"""A config reaches the runtime touching only what changed, by full reload or by delta."""

from __future__ import annotations

import dataclasses
from typing import Any

from api.store.config_delta import ConfigDelta
from api.wire.config_apply import ConfigApplier
from scheduler_core.model import QueueConfig, Request, TenantLimits
from scheduler_core.runtime import SchedulerRuntime


class CountingRuntime(SchedulerRuntime):
    """A real runtime that records each setter call it gets."""

    def __init__(self) -> None:
        super().__init__(QueueConfig())
        self.calls: list[tuple[str, Any]] = []

    def set_config(self, config: QueueConfig) -> None:
        self.calls.append(("config", config))
        super().set_config(config)

    def set_tenant_limits(self, tenant_id: str, limits: TenantLimits) -> None:
        self.calls.append(("set", tenant_id))
        super().set_tenant_limits(tenant_id, limits)

    def remove_tenant_limits(self, tenant_id: str) -> None:
        self.calls.append(("remove", tenant_id))
        super().remove_tenant_limits(tenant_id)


ONE, SIX = TenantLimits(max_queriers=1), TenantLimits(max_queriers=6)


def test_a_full_reload_sets_only_the_tenants_whose_block_changed_or_went() -> None:
    runtime = CountingRuntime()
    applier = ConfigApplier(runtime)
    applier.apply_full(QueueConfig(), {"a": ONE, "b": ONE, "c": ONE})
    assert sorted(runtime.calls) == [("set", "a"), ("set", "b"), ("set", "c")]
    runtime.calls.clear()
    applier.apply_full(QueueConfig(), {"a": ONE, "b": SIX})
    assert sorted(runtime.calls) == [("remove", "c"), ("set", "b")]
    assert runtime.tenant_limits("b") == SIX
    assert applier.configured("a") and not applier.configured("c")


def test_an_unchanged_config_is_not_set_again_and_a_changed_one_is() -> None:
    runtime = CountingRuntime()
    applier = ConfigApplier(runtime)
    applier.apply_full(QueueConfig(), {})
    assert runtime.calls == []
    changed = dataclasses.replace(QueueConfig(), max_outstanding_requests_per_tenant=7)
    applier.apply_delta(ConfigDelta(version=2, queue_config=changed, tenants={}))
    assert runtime.calls == [("config", changed)] and runtime.config == changed


def test_a_delta_touches_only_the_tenants_it_names() -> None:
    runtime = CountingRuntime()
    applier = ConfigApplier(runtime)
    applier.apply_full(QueueConfig(), {"a": ONE, "b": ONE})
    runtime.calls.clear()
    applier.apply_delta(
        ConfigDelta(version=3, queue_config=None, tenants={"a": None, "b": ONE, "new": SIX})
    )
    assert sorted(runtime.calls) == [("remove", "a"), ("set", "new")]
    assert not applier.configured("a") and applier.configured("new")


def test_a_delta_removing_a_tenant_never_configured_changes_nothing() -> None:
    runtime = CountingRuntime()
    applier = ConfigApplier(runtime)
    applier.apply_delta(ConfigDelta(version=1, queue_config=None, tenants={"ghost": None}))
    assert runtime.calls == []


def test_each_tenant_whose_limits_it_set_or_removed_is_told_with_the_limits_it_now_runs() -> None:
    told: list[tuple[str, TenantLimits]] = []
    runtime = CountingRuntime()
    applier = ConfigApplier(runtime, on_limits=lambda tenant, limits: told.append((tenant, limits)))
    applier.apply_full(QueueConfig(), {"a": ONE, "b": ONE})
    applier.apply_full(QueueConfig(), {"a": ONE, "b": SIX})
    applier.apply_delta(ConfigDelta(version=3, queue_config=None, tenants={"a": None}))

    assert told == [("a", ONE), ("b", ONE), ("b", SIX), ("a", runtime.tenant_limits("a"))]
    assert runtime.tenant_limits("a") == TenantLimits()


def test_an_apply_gives_a_live_federated_queue_its_tenants_new_limits() -> None:
    runtime = CountingRuntime()
    applier = ConfigApplier(runtime)
    runtime.enqueue(Request(id="r1", tenant_id="a|b"))
    applier.apply_full(QueueConfig(), {"a": SIX, "b": ONE})
    assert runtime.tenant_limits("a|b") == ONE
    applier.apply_delta(ConfigDelta(version=3, queue_config=None, tenants={"b": None}))
    assert runtime.tenant_limits("a|b") == SIX
