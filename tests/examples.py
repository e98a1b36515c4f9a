"""Config examples shared by tests in several directories (read them, never mutate)."""

from __future__ import annotations

from typing import Any

__all__ = ["SEED_TENANT_CONFIG"]

# The tenant block of the Cortex query-priority seed, as an operator writes it.
SEED_TENANT_CONFIG: dict[str, Any] = {
    "query_priority": {
        "enabled": True,
        "default_priority": 0,
        "priorities": [
            {
                "priority": 3,
                "reserved_queriers": 1,
                "query_attributes": [{"regex": "special_query"}],
            },
            {
                "priority": 2,
                "query_attributes": [{"regex": "max", "time_window": {"start": "2h", "end": "0h"}}],
            },
            {"priority": 1, "query_attributes": [{"time_window": {"start": "24h"}}]},
        ],
    }
}
