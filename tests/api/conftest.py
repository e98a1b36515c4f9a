from typing import Any

import pytest


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
