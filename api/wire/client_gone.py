"""What a send raises when the client has already closed its connection.

Daphne's websocket layer raises autobahn's `Disconnected`; the ASGI spec
asks servers for an `OSError`, which a reset connection is. Such a send is
no failure of ours: the caller takes its ordinary disconnect path and logs
at debug only. Imports nothing of Django, so the gRPC door may use it.
"""

from __future__ import annotations

from autobahn.exception import Disconnected

__all__ = ["CLIENT_GONE"]

CLIENT_GONE: tuple[type[Exception], ...] = (Disconnected, ConnectionError)
