"""`explain/`: which component and priority one request would get, and why.

A POST because the request to explain is a body, but it changes nothing,
so viewers may call it.
"""

from __future__ import annotations

import time
from typing import Any

from asgiref.sync import async_to_sync
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.rest.permissions import AnyRole
from api.rest.serializers_explain import ExplainRequestSerializer, ExplainResponseSerializer
from api.rest.views.base import ApiView, errors
from api.store import selectors
from api.wire import runtime_host
from scheduler_core.actor_path import actor_path_from_headers, placed_path
from scheduler_core.model import QueueConfig
from scheduler_core.priority import RuleReason
from scheduler_core.tenant_querier_assignment import querier_share

__all__ = ["ExplainView", "actor_body", "explanation_body", "known_queriers", "queriers_body"]


async def _known_queriers_on_loop() -> int | None:
    if not runtime_host.started():
        return None
    # Every querier the shards are computed over, including ones kept by
    # querier_forget_delay: what this replica's shuffle shard sees.
    return len(runtime_host.get_runtime().snapshot().queriers)


def known_queriers() -> int | None:
    """How many queriers this replica's shards are drawn from; None with no runtime."""
    return async_to_sync(_known_queriers_on_loop)()


def actor_body(headers: Any, config: QueueConfig) -> dict[str, Any]:
    """Which actor sub-queue the request would wait in (Loki's hierarchical queues)."""
    path = actor_path_from_headers(headers, config.actor_path_header)
    levels = config.max_queue_hierarchy_levels
    placed = placed_path(path, levels)
    if not path:
        summary = f"no {config.actor_path_header} header: the tenant's own queue"
    elif not placed:
        summary = "actor sub-queues are off (max_queue_hierarchy_levels 0): the tenant's own queue"
    else:
        summary = f"actor sub-queue {'|'.join(placed)}"
        if len(placed) < len(path):
            summary += f" (levels beyond {levels} ignored: {'|'.join(path[len(placed) :])})"
    return {
        "header": config.actor_path_header,
        "path": list(path),
        "placed": list(placed),
        "max_queue_hierarchy_levels": levels,
        "summary": summary,
    }


def queriers_body(limits: Any, known: int | None) -> dict[str, Any]:
    """How many queriers the tenant may use ("this tenant may use 3 of 10 queriers")."""
    body: dict[str, Any] = {
        "max_queriers_per_tenant": limits.max_queriers,
        "max_query_capacity": limits.max_query_capacity,
        "known": known,
        "may_use": None,
        "decided_by": None,
        "summary": "no scheduler runs in this process, so its queriers are unknown",
    }
    if known is not None:
        share = querier_share(limits.max_queriers, limits.max_query_capacity, known)
        body.update(may_use=share.may_use, decided_by=share.decided_by, summary=share.summary())
    return body


def _reason(reason: RuleReason) -> dict[str, Any]:
    return {
        "rule_index": reason.rule_index,
        "attribute_index": reason.attribute_index,
        "field": reason.field,
        "matched": reason.matched,
        "message": reason.message,
    }


def explanation_body(
    found: selectors.Explanation,
    known: int | None = None,
    actor: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The response: the verdict, then one entry per rule saying why (not) it matched.

    A rule after the one that matched was never evaluated (first match
    wins), and with priority disabled no rule is evaluated at all.
    """
    match, rejection = found.match, found.rejection
    last_evaluated = -1
    if match.source == "rule" and match.rule_index is not None:
        last_evaluated = match.rule_index
    elif match.source == "default":
        last_evaluated = len(found.limits.query_priority.priorities) - 1
    rules = [
        {
            "rule_index": index,
            "priority": pdef.priority,
            "matched": match.rule_index == index,
            "evaluated": index <= last_evaluated,
            "reasons": [_reason(r) for r in match.reasons if r.rule_index == index],
        }
        for index, pdef in enumerate(found.limits.query_priority.priorities)
    ]
    select = found.select_range
    return {
        "tenant": found.tenant_id,
        "tenant_configured": found.tenant_configured,
        "now": found.now,
        "component": found.component,
        "select_range": None if select is None else {"start": select[0], "end": select[1]},
        "priority": match.priority,
        "source": match.source,
        "rule_index": match.rule_index,
        "attribute_index": match.attribute_index,
        "rules": rules,
        "reasons": [_reason(r) for r in match.reasons],
        "queriers": queriers_body(found.limits, known),
        "actor": actor if actor is not None else actor_body({}, QueueConfig()),
        "rejected_by": rejection.attribute_index if rejection is not None else None,
        "rejection_reasons": [_reason(r) for r in rejection.reasons] if rejection else [],
    }


class ExplainView(ApiView):
    """Explain one request against the tenant's stored (or a draft) block."""

    permission_classes = [AnyRole]

    @extend_schema(
        operation_id="explain_create",
        summary="Explain a request",
        request=ExplainRequestSerializer,
        responses={200: ExplainResponseSerializer, **errors(400, 413, 415)},
    )
    def post(self, request: Request) -> Response:
        given = ExplainRequestSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        data = given.validated_data
        found = selectors.query_explain(
            tenant_id=data["tenant"],
            query=data["query"],
            api_type=data["api_type"],
            start=data["start"],
            end=data["end"],
            step=data["step"],
            headers=data["headers"],
            now=data["now"] if data["now"] is not None else time.time(),
            draft_config=data["tenant_config"],
            matchers=data["matchers"],
        )
        actor = actor_body(data["headers"], selectors.queue_config_get())
        return Response(explanation_body(found, known_queriers(), actor))
