"""Let Cortex queriers run requests that came from websocket frontends.

Both protocols share one queue, so a gRPC querier worker may be handed a
request whose frontend speaks JSON over a websocket and has no
`FrontendForQuerier` endpoint. We rebuild a Prometheus HTTP request from the
request's fields, name *ourselves* as its frontend, and serve
`FrontendForQuerier/QueryResult` on the scheduler's own gRPC port. The
result goes to the request's payload through its async `on_result(request,
status, body, querier_id, queue_seconds)`, as the websocket querier
transport delivers results; a JSON body is decoded first.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import grpc

from api.wire.bounded_json import loads_bounded
from api.wire.client_gone import log_task_failure
from scheduler_core.loops import running_loop
from scheduler_core.model import Request
from scheduler_core.pb import frontendv2pb_pb2, httpgrpc_pb2
from scheduler_core.pb import schedulerpb_pb2 as pb

__all__ = ["ForeignRequests", "http_request_for", "query_result", "query_result_handler"]

log = logging.getLogger(__name__)

_PATHS = {
    "query": "/api/v1/query",
    "query_range": "/api/v1/query_range",
    "series": "/api/v1/series",
    "labels": "/api/v1/labels",
    "label_values": "/api/v1/label/__name__/values",
    "metadata": "/api/v1/metadata",
}
_SELECTOR_APIS = frozenset({"series", "labels", "label_values"})


def http_request_for(request: Request) -> httpgrpc_pb2.HTTPRequest:
    """A Prometheus API call equivalent to what the request describes."""
    params: list[tuple[str, str]] = []
    if request.api_type in _SELECTOR_APIS:
        params += [("match[]", selector) for selector in request.query.split(",") if selector]
    elif request.query:
        params.append(("query", request.query))
    if request.api_type == "query":
        if request.end is not None:
            params.append(("time", repr(request.end)))
    else:
        params += [
            (k, repr(v))
            for k, v in (("start", request.start), ("end", request.end))
            if v is not None
        ]
    if request.api_type == "query_range" and request.step is not None:
        params.append(("step", repr(request.step)))
    headers = {**request.headers, "X-Scope-OrgID": request.tenant_id}
    return httpgrpc_pb2.HTTPRequest(
        method="GET",
        url=f"{_PATHS.get(request.api_type, _PATHS['query'])}?{urlencode(params)}",
        headers=[httpgrpc_pb2.Header(key=k, values=[v]) for k, v in headers.items()],
    )


class ForeignRequests:
    """Non-gRPC requests currently out on gRPC querier workers, by local id.

    Ids leave when the request completes, is cancelled or fails (observer
    hooks), or when its result arrives, whichever is first. A request whose
    result arrived stays `answered` until it ends: its worker may still
    leave before saying "done", and the request must then end, not run again.
    One put back in the queue because its querier's stream ended first
    (`on_interrupted`) leaves too: its run is over, and a result of it that
    lands later (it travels on another connection) is dropped. Taken, it
    reached the frontend while the request stayed queued, to run again.
    """

    def __init__(self, own_address: str) -> None:
        self.own_address = own_address
        self._ids = itertools.count(1)
        self._by_local: dict[int, _Out] = {}
        self._local_of: dict[str, int] = {}
        self._answered: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    def message_for(
        self, request: Request, querier_id: str, queue_seconds: float
    ) -> pb.SchedulerToQuerier:
        local = next(self._ids)
        self.forget(request)
        self._local_of[request.id] = local
        self._by_local[local] = _Out(request, querier_id, queue_seconds)
        return pb.SchedulerToQuerier(
            queryID=local,
            httpRequest=http_request_for(request),
            frontendAddress=self.own_address,
            userID=request.tenant_id,
            isRoot=True,
        )

    def result(self, local: int, status: int, body: bytes) -> None:
        out = self._by_local.pop(local, None)
        if out is None:
            # A late result of a request cancelled, failed, or put back for
            # another run after its querier's stream ended.
            log.debug("dropped the result of query %d: no longer out", local)
            return
        request = out.request
        del self._local_of[request.id]
        self._answered.add(request.id)
        on_result = getattr(request.payload, "on_result", None)
        if on_result is None:
            log.error("request %s has no way to receive a querier's result", request.id)
            return
        delivery = on_result(request, status, _decoded(body), out.querier_id, out.queue_seconds)
        task = running_loop().create_task(delivery)
        self._tasks.add(task)
        task.add_done_callback(self._delivered)

    def _delivered(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        log_task_failure(
            task,
            log,
            "the frontend left before a querier's result reached it",
            "delivering a querier's result failed",
        )

    def answered(self, request_id: str) -> bool:
        """The request's result reached its frontend through us."""
        return request_id in self._answered

    def unanswered(self, request: Request) -> bool:
        """Ours to answer (its frontend is not Cortex's) and no result came: a
        querier saying "done" now has lost the result on its way to us."""
        return request.id in self._local_of

    def forget(self, request: Request, *_: Any) -> None:
        self._answered.discard(request.id)
        local = self._local_of.pop(request.id, None)
        if local is not None:
            self._by_local.pop(local, None)

    # A Cortex querier awaits its QueryResult call before it says "done", so
    # by completion the result has already been delivered.
    on_completed = forget
    on_cancelled = forget
    on_failed = forget
    on_interrupted = forget

    def __len__(self) -> int:
        return len(self._by_local)


@dataclass(frozen=True, slots=True)
class _Out:
    request: Request
    querier_id: str
    queue_seconds: float


def _decoded(body: bytes) -> Any:
    """Prometheus answers JSON; a body that is not JSON is passed on as text.

    So is JSON nested past the protocol's limit: `json.loads` would raise a
    RecursionError there, and the frontend would never get its result.
    """
    text = body.decode("utf-8", errors="replace")
    try:
        return loads_bounded(text)
    except ValueError:
        return text


def query_result(foreign: ForeignRequests) -> Any:
    """The unary `QueryResult` method for either server (grpcio's or the lean one)."""

    async def handle(
        message: frontendv2pb_pb2.QueryResultRequest, context: Any
    ) -> frontendv2pb_pb2.QueryResultResponse:
        foreign.result(message.queryID, message.httpResponse.Code, message.httpResponse.body)
        return frontendv2pb_pb2.QueryResultResponse()

    return handle


def query_result_handler(foreign: ForeignRequests) -> grpc.GenericRpcHandler:
    """`frontendv2pb.FrontendForQuerier/QueryResult`, served by the scheduler."""
    return grpc.method_handlers_generic_handler(
        "frontendv2pb.FrontendForQuerier",
        {
            "QueryResult": grpc.unary_unary_rpc_method_handler(
                query_result(foreign),
                request_deserializer=frontendv2pb_pb2.QueryResultRequest.FromString,
                response_serializer=frontendv2pb_pb2.QueryResultResponse.SerializeToString,
            )
        },
    )
