from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client


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
