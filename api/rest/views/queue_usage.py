"""`queue/usage/`: which tenants held the queriers over the last minute.

Read on the scheduler's loop (`api.wire.usage_block`), as `queue/` is; with
peer replicas the answer sums each tenant over the replicas, the peers'
figures as of their last summary (each publishes its busiest
`PUBLISHED_ROWS` tenants), with the `replicas` block `queue/` carries.
"""

from __future__ import annotations

import time
from typing import Any

from asgiref.sync import async_to_sync
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.cluster.replica_board import get_board
from api.cluster.replica_usage import merge_usage
from api.rest.query_params import int_param, int_parameter
from api.rest.serializers_usage import QueueUsageSerializer
from api.rest.views.base import ApiView, errors
from api.rest.views.runtime_state import take_view, with_replicas
from api.wire import runtime_host
from api.wire.queue_peers import peers_unheard

__all__ = ["QueueUsageView"]

DEFAULT_LIMIT = 20
MAX_LIMIT = 500


async def _usage_on_loop(limit: int) -> dict[str, Any] | None:
    if not runtime_host.started():
        return None
    return runtime_host.get_host().usage_block(limit)


def _stopped() -> dict[str, Any]:
    return {
        "running": False,
        "window_seconds": None,
        "span_seconds": 0.0,
        "querier_seconds": 0.0,
        "workers": 0,
        "tenant_count": 0,
        "tenants": [],
    }


class QueueUsageView(ApiView):
    """Tenants by querier time held over the last minute, busiest first."""

    @extend_schema(
        operation_id="queue_usage_retrieve",
        summary="Querier time per tenant",
        parameters=[
            int_parameter(
                "limit", default=DEFAULT_LIMIT, minimum=1, maximum=MAX_LIMIT, description="rows"
            )
        ],
        responses={200: QueueUsageSerializer, **errors(400)},
    )
    def get(self, request: Request) -> Response:
        limit = int_param(request, "limit", default=DEFAULT_LIMIT, minimum=1, maximum=MAX_LIMIT)
        unheard = peers_unheard()
        local = async_to_sync(_usage_on_loop)(limit)
        if local is None:
            return Response(with_replicas(_stopped(), None, unheard))
        taken = take_view()
        merged = taken[1] if taken is not None else None
        if merged is not None:
            peers = get_board().fresh_peers(time.time())
            local = (
                merge_usage([local, *(p.stats.get("usage") for p in peers if p.stats)], limit)
                or local
            )
        return Response(with_replicas({"running": True, **local}, merged, unheard))
