"""`seed_demo_config` says what it did on every run, and seeds all the demo or none of it."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import OperationalError

from api.management.commands import seed_demo_config
from api.management.commands.seed_demo_config import DEMO_TENANTS
from api.store.models import ConfigRevision, Tenant
from api.store.services import tenant_delete

pytestmark = pytest.mark.django_db


def run() -> list[str]:
    out = StringIO()
    call_command("seed_demo_config", stdout=out, stderr=StringIO())
    return out.getvalue().splitlines()


def test_a_second_seed_says_each_demo_tenant_was_left_as_it_is() -> None:
    assert run() == [f"Seeded demo tenant {name}" for name in DEMO_TENANTS]
    tenant_delete(
        tenant_id="team-c", expected_version=None, author=None, source=ConfigRevision.Source.UI
    )
    assert run() == [
        "Demo tenant team-a exists already: left as it is",
        "Demo tenant team-b exists already: left as it is",
        "Demo tenant team-c was deleted (History holds it): not seeded again",
        "Demo tenant batch exists already: left as it is",
    ]


def test_a_database_failing_half_way_seeds_nothing_and_says_why_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = seed_demo_config.tenant_put

    def fails_on_the_third(**kwargs: object) -> object:
        if kwargs["tenant_id"] == "team-c":
            raise OperationalError("disk I/O error")
        return real(**kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(seed_demo_config, "tenant_put", fails_on_the_third)
    with pytest.raises(CommandError, match="^the database failed: disk I/O error$"):
        run()
    assert not Tenant.objects.exists()
    assert not ConfigRevision.objects.exists()
