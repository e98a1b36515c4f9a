"""Django loads an app's models from `<app>.models`; ours live in `api.store.models`."""

from api.store.models import ApiToken, ConfigRevision, OperatorCancel, SchedulerSettings, Tenant

__all__ = ["ApiToken", "ConfigRevision", "OperatorCancel", "SchedulerSettings", "Tenant"]
