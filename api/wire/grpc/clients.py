# mypy: disallow-untyped-calls=False
"""Python stand-ins for a Cortex query-frontend and querier workers.

Built only from our protos, they speak the wire protocol the way Cortex's Go
clients do: the frontend serves `FrontendForQuerier/QueryResult` itself and
runs FrontendLoop streams; each querier worker runs one QuerierLoop stream.
Used by the gRPC tests and by `tests/load/grpc_bench.py`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import grpc

from api.wire.grpc.tls import ClientTls, ServerTls, dial
from scheduler_core.pb import frontendv2pb_pb2, httpgrpc_pb2
from scheduler_core.pb import schedulerpb_pb2 as pb
from scheduler_core.pb.frontendv2pb_pb2_grpc import (
    FrontendForQuerierServicer,
    FrontendForQuerierStub,
    add_FrontendForQuerierServicer_to_server,
)
from scheduler_core.pb.schedulerpb_pb2_grpc import SchedulerForFrontendStub, SchedulerForQuerierStub

__all__ = [
    "CortexFrontend",
    "FrontendLoop",
    "QuerierWorker",
    "ReceivedResult",
    "get_request",
    "post_request",
]

FORM = "application/x-www-form-urlencoded"


def get_request(
    path: str, params: Sequence[tuple[str, str]], headers: dict[str, str] | None = None
) -> httpgrpc_pb2.HTTPRequest:
    """A forwarded GET, as a Cortex frontend builds it."""
    return httpgrpc_pb2.HTTPRequest(
        method="GET",
        url=f"{path}?{urlencode(params)}",
        headers=[httpgrpc_pb2.Header(key=k, values=[v]) for k, v in (headers or {}).items()],
    )


def post_request(
    path: str, params: Sequence[tuple[str, str]], headers: dict[str, str] | None = None
) -> httpgrpc_pb2.HTTPRequest:
    """A forwarded POST with the parameters form-encoded in the body."""
    all_headers = {"Content-Type": FORM, **(headers or {})}
    return httpgrpc_pb2.HTTPRequest(
        method="POST",
        url=path,
        headers=[httpgrpc_pb2.Header(key=k, values=[v]) for k, v in all_headers.items()],
        body=urlencode(params).encode(),
    )


@dataclass(frozen=True)
class ReceivedResult:
    """One QueryResult call the frontend received."""

    query_id: int
    code: int
    body: bytes
    org_id: str | None


class _ResultServicer(FrontendForQuerierServicer):
    def __init__(self, frontend: CortexFrontend) -> None:
        self._frontend = frontend

    async def QueryResult(self, request: Any, context: Any) -> Any:  # noqa: N802
        metadata = dict(context.invocation_metadata() or ())
        self._frontend.deliver(
            ReceivedResult(
                query_id=request.queryID,
                code=request.httpResponse.Code,
                body=request.httpResponse.body,
                org_id=metadata.get("x-scope-orgid"),
            )
        )
        return frontendv2pb_pb2.QueryResultResponse()


class CortexFrontend:
    """A query-frontend: its QueryResult server plus FrontendLoop streams.

    `client_tls` is how it dials the scheduler, `server_tls` how its
    QueryResult server listens; None means plaintext.
    """

    def __init__(
        self,
        scheduler_address: str,
        *,
        client_tls: ClientTls | None = None,
        server_tls: ServerTls | None = None,
    ) -> None:
        self.scheduler_address = scheduler_address
        self.client_tls = client_tls
        self.server_tls = server_tls
        self.address = ""
        self.results: dict[int, ReceivedResult] = {}
        # Called for every result as it arrives (benchmarks count with it).
        self.on_result: Callable[[ReceivedResult], None] | None = None
        self._waiting: dict[int, asyncio.Future[ReceivedResult]] = {}
        self._server = grpc.aio.server()
        self._channel: grpc.aio.Channel | None = None

    async def start(self) -> CortexFrontend:
        add_FrontendForQuerierServicer_to_server(_ResultServicer(self), self._server)
        if self.server_tls is None:
            port = self._server.add_insecure_port("127.0.0.1:0")
        else:
            port = self._server.add_secure_port("127.0.0.1:0", self.server_tls.credentials())
        await self._server.start()
        self.address = f"127.0.0.1:{port}"
        self._channel = dial(self.scheduler_address, self.client_tls)
        return self

    async def open_loop(self, *, address: str | None = None) -> FrontendLoop:
        """Open a FrontendLoop and INIT it; raises if not answered OK."""
        assert self._channel is not None
        loop = FrontendLoop(SchedulerForFrontendStub(self._channel).FrontendLoop())
        reply = await loop.send(
            pb.FrontendToScheduler(type=pb.INIT, frontendAddress=address or self.address)
        )
        if reply.status != pb.OK:
            raise RuntimeError(f"INIT answered {pb.SchedulerToFrontendStatus.Name(reply.status)}")
        return loop

    def deliver(self, result: ReceivedResult) -> None:
        if self.on_result is not None:
            self.on_result(result)
            return
        self.results[result.query_id] = result
        waiter = self._waiting.pop(result.query_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(result)

    async def result(self, query_id: int, timeout: float = 5.0) -> ReceivedResult:
        if query_id in self.results:
            return self.results[query_id]
        waiter = self._waiting.setdefault(query_id, asyncio.get_running_loop().create_future())
        return await asyncio.wait_for(asyncio.shield(waiter), timeout)

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
        await self._server.stop(0)


class FrontendLoop:
    """One FrontendLoop stream; replies come one per message, in order."""

    def __init__(self, call: Any) -> None:
        self.call = call

    async def send(
        self, msg: pb.FrontendToScheduler, timeout: float | None = 5.0
    ) -> pb.SchedulerToFrontend:
        """Write, then read the reply; `timeout` None waits without a timer task."""
        await self.call.write(msg)
        reply = await _read(self.call, timeout)
        if reply is grpc.aio.EOF:
            raise EOFError("scheduler closed the frontend loop")
        assert isinstance(reply, pb.SchedulerToFrontend)
        return reply

    async def enqueue(
        self,
        query_id: int,
        user_id: str,
        request: httpgrpc_pb2.HTTPRequest,
        *,
        dimensions: Sequence[str] = (),
        timeout: float | None = 5.0,
    ) -> int:
        """ENQUEUE; returns the reply status."""
        reply = await self.send(
            pb.FrontendToScheduler(
                type=pb.ENQUEUE,
                queryID=query_id,
                userID=user_id,
                httpRequest=request,
                additionalQueueDimensions=list(dimensions),
            ),
            timeout,
        )
        return reply.status

    async def cancel(self, query_id: int) -> int:
        reply = await self.send(pb.FrontendToScheduler(type=pb.CANCEL, queryID=query_id))
        return reply.status

    async def close(self) -> None:
        await self.call.done_writing()
        while await self.call.read() is not grpc.aio.EOF:
            pass


class QuerierWorker:
    """One querier worker stream; `querier_id` is shared by a querier's workers.

    `client_tls` is how it dials frontends' QueryResult (None: plaintext).
    """

    def __init__(
        self, channel: grpc.aio.Channel, querier_id: str, *, client_tls: ClientTls | None = None
    ) -> None:
        self.querier_id = querier_id
        self._client_tls = client_tls
        self._channel = channel
        self._frontends: dict[str, grpc.aio.Channel] = {}
        self._stubs: dict[str, FrontendForQuerierStub] = {}
        self.call: Any = None

    async def open(self) -> QuerierWorker:
        self.call = SchedulerForQuerierStub(self._channel).QuerierLoop()
        await self.call.write(pb.QuerierToScheduler(querierID=self.querier_id))
        return self

    async def next(self, timeout: float | None = 5.0) -> pb.SchedulerToQuerier:
        msg = await _read(self.call, timeout)
        if msg is grpc.aio.EOF:
            raise EOFError("scheduler ended the querier loop")
        assert isinstance(msg, pb.SchedulerToQuerier)
        return msg

    async def answer(
        self, msg: pb.SchedulerToQuerier, code: int = 200, body: bytes = b"{}"
    ) -> None:
        """Send the result to the frontend, then tell the scheduler "done"."""
        await self.send_result(msg, code, body)
        await self.done()

    async def send_result(
        self, msg: pb.SchedulerToQuerier, code: int = 200, body: bytes = b"{}"
    ) -> None:
        """Only the result, to the frontend that sent `msg` (no "done" yet)."""
        await self.stub_for(msg).QueryResult(
            frontendv2pb_pb2.QueryResultRequest(
                queryID=msg.queryID,
                httpResponse=httpgrpc_pb2.HTTPResponse(Code=code, body=body),
            ),
            metadata=(("x-scope-orgid", msg.userID),),
        )

    def stub_for(self, msg: pb.SchedulerToQuerier) -> FrontendForQuerierStub:
        """The `FrontendForQuerier` client of the frontend that sent `msg`."""
        stub = self._stubs.get(msg.frontendAddress)
        if stub is None:
            channel = dial(msg.frontendAddress, self._client_tls)
            self._frontends[msg.frontendAddress] = channel
            stub = self._stubs[msg.frontendAddress] = FrontendForQuerierStub(channel)
        return stub

    async def done(self) -> None:
        await self.call.write(pb.QuerierToScheduler())

    def break_stream(self) -> None:
        self.call.cancel()

    async def close(self) -> None:
        """End the stream and close the channels to frontends."""
        if self.call is not None:
            self.call.cancel()
        for channel in self._frontends.values():
            await channel.close()
        self._frontends.clear()
        self._stubs.clear()

    async def notify_shutdown(self) -> None:
        await SchedulerForQuerierStub(self._channel).NotifyQuerierShutdown(
            pb.NotifyQuerierShutdownRequest(querierID=self.querier_id)
        )


async def _read(call: Any, timeout: float | None) -> Any:
    # wait_for wraps the read in a task of its own (Python 3.11): the
    # benchmark's hot path passes None to measure the protocol, not that.
    if timeout is None:
        return await call.read()
    return await asyncio.wait_for(call.read(), timeout)
