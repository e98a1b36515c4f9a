"""Report requests that fail on the scheduler's side to their frontend.

Results normally travel querier -> frontend directly. Only when the
scheduler itself gives up on a request (its querier vanished twice, the
scheduler stopped with it still queued) does it call the frontend's
`FrontendForQuerier.QueryResult`, as Cortex's scheduler does: HTTP 500 with
the reason as body, the tenant in `x-scope-orgid` metadata (the frontend
checks the result's tenant against the request's).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict

import grpc

from api.wire.grpc.admission import GrpcReplyHandle
from api.wire.grpc.lean_client import GrpcCallError, LeanChannels
from api.wire.grpc.tls import ClientTls, dial
from scheduler_core.loops import running_loop
from scheduler_core.model import Request
from scheduler_core.pb import frontendv2pb_pb2, httpgrpc_pb2

__all__ = ["FAILURE_STATUS", "ORG_ID_METADATA", "QUERY_RESULT_METHOD", "ResultReporter"]

log = logging.getLogger(__name__)

FAILURE_STATUS = 500
ORG_ID_METADATA = "x-scope-orgid"
QUERY_RESULT_METHOD = "/frontendv2pb.FrontendForQuerier/QueryResult"
# Open channels kept for recently failing frontends; older ones are closed.
_MAX_CHANNELS = 64


class ResultReporter:
    """Sends failure results; each report runs on its own task.

    `on_failed` is called synchronously by the runtime (from its observer),
    so it must not block: it schedules the call and returns. Tasks are kept
    until done so none is garbage-collected mid-flight. With `client_tls`
    every frontend is dialled over TLS; without it, plaintext.
    """

    def __init__(
        self,
        *,
        timeout: float = 5.0,
        client_tls: ClientTls | None = None,
        transport: str = "lean",
    ) -> None:
        self._timeout = timeout
        self._client_tls = client_tls
        # "lean": our HTTP/2 client on this loop (lean_client.py); "grpcio": grpc.aio.
        self._lean = LeanChannels(client_tls) if transport == "lean" else None
        self._channels: OrderedDict[str, grpc.aio.Channel] = OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()
        self.sent = 0
        self.errors = 0

    def on_failed(self, request: Request, reason: str) -> None:
        handle = request.payload
        if isinstance(handle, GrpcReplyHandle):
            self.deliver(handle, FAILURE_STATUS, reason.encode(), content_type="text/plain")

    def deliver(
        self,
        handle: GrpcReplyHandle,
        status: int,
        body: bytes,
        *,
        content_type: str = "application/json",
    ) -> None:
        """Send a result to the request's frontend in the background.

        Also how a querier of another protocol (websocket) answers a request
        that came from a Cortex frontend.
        """
        response = httpgrpc_pb2.HTTPResponse(
            Code=status,
            headers=[httpgrpc_pb2.Header(key="Content-Type", values=[content_type])],
            body=body,
        )
        task = running_loop().create_task(self.send(handle, response))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def send(self, handle: GrpcReplyHandle, response: httpgrpc_pb2.HTTPResponse) -> None:
        """One QueryResult call; a frontend that is gone is logged, not retried."""
        message = frontendv2pb_pb2.QueryResultRequest(
            queryID=handle.query_id, httpResponse=response
        )
        if self._lean is not None:
            try:
                await self._lean.unary(
                    handle.frontend_address,
                    QUERY_RESULT_METHOD,
                    message.SerializeToString(),
                    ((ORG_ID_METADATA, handle.user_id),),
                    self._timeout,
                )
            except GrpcCallError as exc:
                self._failed(handle, exc.details)
                return
            self.sent += 1
            return
        query_result = self._channel(handle.frontend_address).unary_unary(
            QUERY_RESULT_METHOD,
            request_serializer=frontendv2pb_pb2.QueryResultRequest.SerializeToString,
            response_deserializer=frontendv2pb_pb2.QueryResultResponse.FromString,
        )
        try:
            await query_result(
                message, metadata=((ORG_ID_METADATA, handle.user_id),), timeout=self._timeout
            )
        except grpc.aio.AioRpcError as exc:
            self._failed(handle, exc.details() or "")
            return
        self.sent += 1

    def _failed(self, handle: GrpcReplyHandle, details: str) -> None:
        self.errors += 1
        log.warning(
            "sending the result of query %d to frontend %s: %s",
            handle.query_id,
            handle.frontend_address,
            details,
        )

    async def wait_idle(self) -> None:
        """Wait for every report scheduled so far (used on shutdown and in tests)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        await self.wait_idle()
        if self._lean is not None:
            self._lean.close()
        channels = list(self._channels.values())
        self._channels.clear()
        for channel in channels:
            await channel.close()

    def _channel(self, address: str) -> grpc.aio.Channel:
        channel = self._channels.pop(address, None)
        if channel is None:
            channel = dial(address, self._client_tls)
        self._channels[address] = channel
        while len(self._channels) > _MAX_CHANNELS:
            _, oldest = self._channels.popitem(last=False)
            task = running_loop().create_task(oldest.close())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return channel
