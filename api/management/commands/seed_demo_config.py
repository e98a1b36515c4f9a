"""`manage.py seed_demo_config`: a few demo tenants, for `make demo`.

Idempotent and polite: a demo tenant that exists, or ever did, is left as
it is, so re-running `make demo` never undoes edits made in the browser,
deleting one included (its History holds its revisions; an import that
deletes one without naming it leaves none, so there it is seeded again).
Every demo tenant gets a line saying which of those it was: a second run
that printed nothing read as a seed that had silently failed.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction

from api.management.commands._database import database_command
from api.store.exceptions import VersionConflict
from api.store.models import ConfigRevision, Tenant
from api.store.services import tenant_put

__all__ = ["DEMO_TENANTS", "Command"]

DEMO_TENANTS: dict[str, dict[str, Any]] = {
    "team-a": {
        "max_queriers_per_tenant": 0,
        "max_outstanding_requests_per_tenant": 200,
        "query_priority": {
            "enabled": True,
            "default_priority": 1,
            "priorities": [
                {
                    "priority": 10,
                    "reserved_queriers": 1,
                    "query_attributes": [
                        {"regex": "ALERTS|alertmanager"},
                        {"user_agent_regex": "^grafana", "dashboard_uid": "oncall"},
                    ],
                },
                {"priority": 5, "query_attributes": [{"time_window": {"start": "1h"}}]},
            ],
        },
    },
    "team-b": {
        "max_queriers_per_tenant": 3,
        "query_priority": {
            "enabled": True,
            "default_priority": 2,
            "priorities": [
                {
                    "priority": 3,
                    "reserved_queriers": 0.5,
                    "query_attributes": [{"api_type": "query"}],
                },
                {"priority": 1, "query_attributes": [{"time_range_limit": {"min": "24h"}}]},
            ],
        },
    },
    "team-c": {"max_queriers_per_tenant": 2},
    "batch": {
        "max_outstanding_requests_per_tenant": 50,
        "query_priority": {
            "enabled": True,
            "default_priority": 0,
            "priorities": [
                {"priority": 1, "query_attributes": [{"query_step_limit": {"max": "1m"}}]},
            ],
        },
    },
}


class Command(BaseCommand):
    help = (
        "Create the demo tenants that never existed yet; say which it created and which it "
        "left alone."
    )

    @database_command
    def handle(self, *args: Any, **options: Any) -> None:
        # One transaction: the lines below describe what was committed, and a
        # database that fails half way leaves no half-seeded demo.
        with transaction.atomic():
            present = set(
                Tenant.objects.filter(tenant_id__in=DEMO_TENANTS).values_list(
                    "tenant_id", flat=True
                )
            )
            recorded = set(
                ConfigRevision.objects.filter(
                    kind=ConfigRevision.Kind.TENANT, key__in=DEMO_TENANTS
                ).values_list("key", flat=True)
            )
            lines = [
                _seed(tenant_id, config, present=present, recorded=recorded)
                for tenant_id, config in DEMO_TENANTS.items()
            ]
        for line in lines:
            self.stdout.write(line)


def _seed(tenant_id: str, config: dict[str, Any], *, present: set[str], recorded: set[str]) -> str:
    """Create one demo tenant unless it exists or ever did; the line that says which."""
    if tenant_id in present:
        return f"Demo tenant {tenant_id} exists already: left as it is"
    if tenant_id in recorded:
        return f"Demo tenant {tenant_id} was deleted (History holds it): not seeded again"
    try:
        tenant_put(
            tenant_id=tenant_id,
            config=config,
            expected_version=None,
            author=None,
            source=ConfigRevision.Source.CLI,
            message="demo seed",
        )
    except VersionConflict:
        # Created since it was read above (the editor, or a second seed).
        return f"Demo tenant {tenant_id} exists already: left as it is"
    return f"Seeded demo tenant {tenant_id}"
