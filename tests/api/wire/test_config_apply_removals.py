"""Subscribers hear of each tenant block an applier drops, by full reload or by delta."""

from __future__ import annotations

import pytest

from api.store.config_delta import ConfigDelta
from api.wire import config_apply
from api.wire.config_apply import ConfigApplier, on_tenant_removed
from scheduler_core.model import QueueConfig, TenantLimits
from scheduler_core.runtime import SchedulerRuntime

ONE = TenantLimits(max_queriers=1)


class Listener:
    """Subscribed to removals; notes each tenant and whether its applier still had it then."""

    def __init__(self, applier: ConfigApplier) -> None:
        self.applier = applier
        self.heard: list[tuple[str, bool]] = []

    def __call__(self, runtime: SchedulerRuntime, tenant_id: str) -> None:
        assert runtime is self.applier.runtime
        self.heard.append((tenant_id, self.applier.configured(tenant_id)))


@pytest.fixture
def listener(monkeypatch: pytest.MonkeyPatch) -> Listener:
    monkeypatch.setattr(config_apply, "_REMOVED", [])
    applier = ConfigApplier(SchedulerRuntime(QueueConfig()))
    applier.apply_full(QueueConfig(), {"a": ONE, "b": ONE, "c": ONE})
    subscriber = Listener(applier)
    on_tenant_removed(subscriber)
    on_tenant_removed(subscriber)  # subscribed once, however often asked
    return subscriber


def test_a_full_reload_without_a_tenant_reports_it_removed_and_unconfigured(
    listener: Listener,
) -> None:
    listener.applier.apply_full(QueueConfig(), {"a": ONE, "b": TenantLimits(max_queriers=6)})
    assert listener.heard == [("c", False)]
    assert listener.applier.runtime.tenant_limits("c") == TenantLimits()


def test_a_delta_deleting_a_tenant_reports_it_once_and_an_unknown_one_not_at_all(
    listener: Listener,
) -> None:
    delta = ConfigDelta(version=2, queue_config=None, tenants={"b": None, "nobody": None})
    listener.applier.apply_delta(delta)
    listener.applier.apply_delta(ConfigDelta(version=3, queue_config=None, tenants={"b": None}))
    assert listener.heard == [("b", False)]
    assert listener.applier.configured("a") and listener.applier.configured("c")
