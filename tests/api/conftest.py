from collections.abc import AsyncIterator
from typing import Any

import pytest

from api.wire import runtime_host


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


@pytest.fixture
async def host(settings: Any, transactional_db: None) -> AsyncIterator[runtime_host.RuntimeHost]:
    """The process's runtime host, started for one test and shut down after it."""
    settings.GRPC_PORT = 0
    started = await runtime_host.ensure_started()
    yield started
    await runtime_host.shutdown(drain_timeout=0)
