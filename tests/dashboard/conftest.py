from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client


@pytest.fixture(autouse=True)
def _fresh_drill_rows() -> Iterator[None]:
    """dashboard.drill keeps encoded rows process-wide, keyed by request id, enqueue time
    and replica, not by query: tests that enqueue "r1" at FakeClock(100.0) on "replica-1"
    would otherwise be shown an earlier test's row."""
    from dashboard import drill

    drill._ENCODED.clear()
    yield
    drill._ENCODED.clear()


@pytest.fixture
def editor_client(editor: User) -> Client:
    client = Client()
    client.force_login(editor)
    return client


@pytest.fixture
def viewer_client(viewer: User) -> Client:
    client = Client()
    client.force_login(viewer)
    return client


@pytest.fixture
def rules() -> dict[str, Any]:
    """A valid tenant block with one priority rule."""
    return {
        "max_queriers_per_tenant": 3,
        "query_priority": {
            "enabled": True,
            "default_priority": 1,
            "priorities": [{"priority": 5, "query_attributes": [{"regex": "up"}]}],
        },
    }


@pytest.fixture
def team() -> Any:
    """Tenant "team" saved with test_rule_tools' REJECTING block (a priority rule and a
    rejection rule), for the rule tools' page tests."""
    from api.store import services
    from tests.dashboard.test_rule_tools import REJECTING

    return services.tenant_put(
        tenant_id="team", config=REJECTING, expected_version=None, author=None, source="cli"
    )
