"""A named websocket frontend on several replicas counts once in the merged header."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from api.cluster.replica_stats import WEBSOCKET_NAME_PREFIX, host_stats, merge_stats
from api.cluster.replicas import PeerSummary
from api.wire.frontends import FrontendRow, WebsocketFrontends
from api.wire.usage_block import UsagePages
from scheduler_core.queue import RequestQueue
from scheduler_core.stats import RollingStats
from scheduler_core.tenant_usage import TenantUsage


def host(*sockets: tuple[int, str | None]) -> tuple[Any, list[FrontendRow]]:
    """A runtime host with websocket frontends on these (port, name) sockets."""
    websocket = WebsocketFrontends()
    for port, name in sockets:
        websocket.opened(
            SimpleNamespace(
                scope={"client": ("10.0.0.1", port)},
                token=None,
                pending={},
                frontend_name=name,
            )
        )
    fake = SimpleNamespace(
        stats=RollingStats(clock=lambda: 100.0),
        load=dict,
        websocket_frontends=websocket,
        usage_block=UsagePages(TenantUsage(), RequestQueue()).block,
    )
    return fake, websocket.rows()


def test_a_replica_publishes_its_named_websocket_frontends_beside_grpc_addresses() -> None:
    fake, rows = host((5000, "edge-1"), (5001, "edge-1"), (5002, None))
    grpc = FrontendRow("grpc", "10.0.0.7:9095", "", 2, 0, 1.0)

    stats = host_stats(fake, [*rows, grpc])

    assert stats["frontends"] == 3
    assert stats["frontend_addresses"] == ["10.0.0.7:9095", f"{WEBSOCKET_NAME_PREFIX}edge-1"]


def test_a_named_frontend_on_two_replicas_counts_once_and_anonymous_ones_each() -> None:
    on_a, rows_a = host((5000, "edge-1"), (5001, None))
    on_b, rows_b = host((6000, "edge-1"), (6001, "edge-2"))

    published = json.loads(json.dumps(host_stats(on_b, rows_b)))  # as it crosses Redis
    peer = PeerSummary(replica="b", at=0.0, total=0, leaves=(), queriers=(), stats=published)

    merged = merge_stats(host_stats(on_a, rows_a), [peer], "a")
    assert merged is not None

    # edge-1 (on both), edge-2, and the anonymous socket on A; summed it read 4.
    assert merged["frontends"] == 3
