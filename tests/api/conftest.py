from typing import Any

import pytest
from django.contrib.auth.models import Group, User


@pytest.fixture
def editor(db: None) -> User:
    user = User.objects.create_user("erin", password="pw-erin-123")
    user.groups.add(Group.objects.get(name="editor"))
    return user


@pytest.fixture
def viewer(db: None) -> User:
    user = User.objects.create_user("victor", password="pw-victor-123")
    user.groups.add(Group.objects.get(name="viewer"))
    return user


@pytest.fixture
def rules() -> dict[str, Any]:
    """A valid tenant block with one reserved priority."""
    return {
        "max_queriers_per_tenant": 3,
        "query_priority": {
            "enabled": True,
            "default_priority": 1,
            "priorities": [
                {
                    "priority": 5,
                    "reserved_queriers": 1,
                    "query_attributes": [{"regex": "up"}],
                }
            ],
        },
    }
