"""A Cortex query-frontend and querier workers on `h2lite`, for the benchmark.

Same wire behaviour as `api.wire.grpc.clients` (which the tests use, on grpcio):
the frontend serves `FrontendForQuerier/QueryResult` and runs FrontendLoop
streams; each querier worker runs one QuerierLoop stream, sends its result
to the request's frontend and then its empty "done" message. A querier's
workers share one connection to the scheduler and one per frontend, as a
Go querier's do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from scheduler_core.pb import frontendv2pb_pb2, httpgrpc_pb2
from scheduler_core.pb import schedulerpb_pb2 as pb
from tests.load.h2lite import ClientConnection, ServerConnection, Stream

__all__ = ["LeanFrontend", "LeanFrontendLoop", "LeanQuerier", "LeanWorker", "Result"]

FRONTEND_LOOP = "/schedulerpb.SchedulerForFrontend/FrontendLoop"
QUERIER_LOOP = "/schedulerpb.SchedulerForQuerier/QuerierLoop"
QUERY_RESULT = "/frontendv2pb.FrontendForQuerier/QueryResult"
_DONE = pb.QuerierToScheduler().SerializeToString()
_EMPTY_RESPONSE = frontendv2pb_pb2.QueryResultResponse().SerializeToString()


class Result:
    """One QueryResult the frontend received."""

    __slots__ = ("body", "code", "org_id", "query_id")

    def __init__(self, query_id: int, code: int, body: bytes, org_id: str | None) -> None:
        self.query_id = query_id
        self.code = code
        self.body = body
        self.org_id = org_id


class LeanFrontend:
    """A query-frontend: its QueryResult server and its scheduler connection."""

    def __init__(self, scheduler_address: str, on_result: Callable[[Result], None]) -> None:
        self.scheduler_address = scheduler_address
        self.address = ""
        self.on_result = on_result
        self._server: asyncio.Server | None = None
        self._conn: ClientConnection | None = None

    async def start(self) -> LeanFrontend:
        """Serve QueryResult, then connect to the scheduler."""
        await self.serve()
        self._conn = await ClientConnection.connect(self.scheduler_address)
        return self

    async def serve(self) -> LeanFrontend:
        """Serve QueryResult only (queriers can reach it; no scheduler yet)."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: ServerConnection(self._query_result), "127.0.0.1", 0
        )
        port = self._server.sockets[0].getsockname()[1]
        self.address = f"127.0.0.1:{port}"
        return self

    async def _query_result(self, path: str, headers: dict[str, str], request: bytes) -> bytes:
        if path != QUERY_RESULT:
            raise LookupError(f"unknown method {path}")
        message = frontendv2pb_pb2.QueryResultRequest.FromString(request)
        response = message.httpResponse
        self.on_result(
            Result(message.queryID, response.Code, response.body, headers.get("x-scope-orgid"))
        )
        return _EMPTY_RESPONSE

    async def open_loop(self) -> LeanFrontendLoop:
        """A FrontendLoop, INIT answered OK."""
        assert self._conn is not None
        loop = LeanFrontendLoop(self._conn.open_stream(FRONTEND_LOOP))
        status = await loop.send(pb.FrontendToScheduler(type=pb.INIT, frontendAddress=self.address))
        if status != pb.OK:
            raise RuntimeError(f"INIT answered {pb.SchedulerToFrontendStatus.Name(status)}")
        return loop

    async def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._server is not None:
            self._server.close()


class LeanFrontendLoop:
    """One FrontendLoop stream: a message out, its reply back, in order."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream

    async def send(self, msg: pb.FrontendToScheduler) -> int:
        self.stream.send(msg.SerializeToString())
        reply = await self.stream.recv()
        if reply is None:
            raise EOFError("scheduler closed the frontend loop")
        return pb.SchedulerToFrontend.FromString(reply).status

    async def enqueue(self, query_id: int, user_id: str, request: httpgrpc_pb2.HTTPRequest) -> int:
        """ENQUEUE; returns the reply status."""
        return await self.send(
            pb.FrontendToScheduler(
                type=pb.ENQUEUE, queryID=query_id, userID=user_id, httpRequest=request
            )
        )


class LeanQuerier:
    """One querier process: connections shared by its workers."""

    def __init__(self, scheduler_address: str, querier_id: str) -> None:
        self.scheduler_address = scheduler_address
        self.querier_id = querier_id
        self._scheduler: ClientConnection | None = None
        self._frontends: dict[str, asyncio.Task[ClientConnection]] = {}

    async def worker(self) -> LeanWorker:
        if self._scheduler is None:
            self._scheduler = await ClientConnection.connect(self.scheduler_address)
        stream = self._scheduler.open_stream(QUERIER_LOOP)
        stream.send(pb.QuerierToScheduler(querierID=self.querier_id).SerializeToString())
        return LeanWorker(self, stream)

    async def frontend(self, address: str) -> ClientConnection:
        """The shared connection to a frontend; workers asking at once share one dial."""
        dial = self._frontends.get(address)
        if dial is None or (dial.done() and (dial.exception() or dial.result().lost.is_set())):
            dial = self._frontends[address] = asyncio.ensure_future(
                ClientConnection.connect(address)
            )
        return await dial

    def close(self) -> None:
        if self._scheduler is not None:
            self._scheduler.close()
        for dial in self._frontends.values():
            if dial.done() and not dial.exception():
                dial.result().close()
            else:
                dial.cancel()
        self._frontends.clear()


class LeanWorker:
    """One querier worker stream."""

    def __init__(self, querier: LeanQuerier, stream: Stream) -> None:
        self._querier = querier
        self.stream = stream

    async def next(self) -> pb.SchedulerToQuerier:
        message = await self.stream.recv()
        if message is None:
            raise EOFError("scheduler ended the querier loop")
        return pb.SchedulerToQuerier.FromString(message)

    async def answer(
        self, msg: pb.SchedulerToQuerier, code: int = 200, body: bytes = b"{}"
    ) -> None:
        """The result to the frontend, then "done" to the scheduler."""
        frontend = await self._querier.frontend(msg.frontendAddress)
        request = frontendv2pb_pb2.QueryResultRequest(
            queryID=msg.queryID, httpResponse=httpgrpc_pb2.HTTPResponse(Code=code, body=body)
        )
        await frontend.unary(
            QUERY_RESULT, request.SerializeToString(), (("x-scope-orgid", msg.userID),)
        )
        self.stream.send(_DONE)
