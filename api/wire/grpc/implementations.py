"""Which server runs the gRPC door, read from GRPC_SERVER.

"lean" (the default) is our HTTP/2 layer on the scheduler's event loop
(`lean_server.py`); "grpcio" is `grpc.aio`. Kept apart from server.py so
config/settings.py can check the value at start-up without importing the
servicers.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["IMPLEMENTATIONS", "implementation_from_env"]

IMPLEMENTATIONS = ("lean", "grpcio")


def implementation_from_env(env: Mapping[str, str]) -> str:
    """GRPC_SERVER: "lean" (default) or "grpcio"; anything else is refused by name."""
    value = env.get("GRPC_SERVER", "").strip().lower() or IMPLEMENTATIONS[0]
    if value not in IMPLEMENTATIONS:
        raise ValueError(f"GRPC_SERVER: unknown value {value!r}; use one of lean, grpcio")
    return value
