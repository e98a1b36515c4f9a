"""The gRPC front door: Cortex's scheduler services on the running event loop.

Two servers can run the same servicers (`GRPC_SERVER`): "lean" (the
default), our HTTP/2 layer as an asyncio Protocol on the loop that owns the
SchedulerRuntime (`lean_server.py`), and "grpcio", `grpc.aio` started from
that loop. Either way every servicer call runs on the runtime's thread and
the queue stays lock-free; the lean one also reads and writes there, where
grpcio hands each message between three threads (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from google.protobuf.message import DecodeError

from api.wire.grpc.admission import Admission
from api.wire.grpc.bridge import ForeignRequests, query_result
from api.wire.grpc.frontend_loop import FrontendConnection, FrontendLoopServicer, FrontendRegistry
from api.wire.grpc.implementations import IMPLEMENTATIONS, implementation_from_env
from api.wire.grpc.lean_server import LeanGrpcServer, Method
from api.wire.grpc.querier_loop import QuerierLoopServicer
from api.wire.grpc.result_reporter import ResultReporter
from api.wire.grpc.streams import malformed
from api.wire.grpc.tls import ClientTls, ServerTls
from api.wire.observers import install_observer
from scheduler_core.pb import frontendv2pb_pb2
from scheduler_core.pb import schedulerpb_pb2 as pb
from scheduler_core.runtime import SchedulerRuntime

__all__ = [
    "IMPLEMENTATIONS",
    "MAX_MESSAGE_BYTES",
    "GrpcFrontDoor",
    "PortInUse",
    "implementation_from_env",
    "start_grpc_server",
]

log = logging.getLogger(__name__)

# Larger messages are refused with RESOURCE_EXHAUSTED on that stream only.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024


class PortInUse(Exception):
    """The gRPC port could not be bound."""


class GrpcFrontDoor:
    """The server plus what it shares with the rest of the process.

    `frontends.connections()` lists connected frontend addresses for the
    inspector; `reporter` counts failure reports sent. With `server_tls` the
    port is TLS only (never also plaintext); `client_tls` is how the reporter
    dials frontends' QueryResult servers.
    """

    def __init__(
        self,
        runtime: SchedulerRuntime,
        *,
        admission: Admission | None = None,
        advertise_address: str | None = None,
        server_tls: ServerTls | None = None,
        client_tls: ClientTls | None = None,
        implementation: str | None = None,
        batch_writes: int = 1,
        max_connection_idle: float = 0.0,
    ) -> None:
        self.runtime = runtime
        self.server_tls = server_tls
        self.implementation = implementation or implementation_from_env(os.environ)
        if self.implementation not in IMPLEMENTATIONS:
            raise ValueError(f"unknown gRPC server {self.implementation!r}")
        self.frontends = FrontendRegistry()
        self.reporter = ResultReporter(client_tls=client_tls, transport=self.implementation)
        # Known once bound unless given: queriers must reach it for results
        # of websocket-frontend requests.
        self.foreign = ForeignRequests(advertise_address or "")
        self.port = 0
        admission = admission or Admission(runtime)
        if admission.results is None:
            admission.results = self.reporter
        self.frontend_loops = FrontendLoopServicer(
            runtime, admission, self.frontends, max_message=MAX_MESSAGE_BYTES
        )
        self.querier_loops = QuerierLoopServicer(runtime, self.foreign)
        methods = _methods(self.frontend_loops, self.querier_loops, self.foreign)
        self.server: LeanGrpcServer | grpc.aio.Server
        if self.implementation == "lean":
            self.server = LeanGrpcServer(
                methods,
                max_message=MAX_MESSAGE_BYTES,
                ssl_context=server_tls.ssl_context() if server_tls is not None else None,
                # One socket write per connection per loop turn (default);
                # GRPC_WRITE_BATCHING=0 writes each frame, 2 waits two turns
                # (kept for measuring).
                batch_writes=batch_writes,
                # GOAWAY to a connection with no open stream for this long
                # (GRPC_MAX_CONNECTION_IDLE_SECONDS; 0: never).
                max_connection_idle=max_connection_idle,
            )
        else:
            self.server = _grpcio_server(methods, max_connection_idle=max_connection_idle)

    def frontend_connections(self) -> list[FrontendConnection]:
        return self.frontends.connections()

    async def start(self, *, host: str = "127.0.0.1", port: int) -> int:
        """Bind and serve; returns the bound port (useful with port 0)."""
        target = f"{host}:{port}"
        try:
            if isinstance(self.server, LeanGrpcServer):
                self.port = await self.server.start(host, port)
            elif self.server_tls is None:
                self.port = self.server.add_insecure_port(target)
            else:
                self.port = self.server.add_secure_port(target, self.server_tls.credentials())
        except (RuntimeError, OSError) as exc:
            raise PortInUse(f"cannot listen for gRPC on {host}:{port}: {exc}") from exc
        if not self.foreign.own_address:
            wildcard = host in ("0.0.0.0", "::", "")
            self.foreign.own_address = f"{'127.0.0.1' if wildcard else host}:{self.port}"
            if wildcard:
                log.warning(
                    "gRPC door on every interface without GRPC_ADVERTISE_ADDRESS: "
                    "advertising %s, which queriers on other hosts cannot reach; set "
                    "GRPC_ADVERTISE_ADDRESS to this replica's host:port",
                    self.foreign.own_address,
                )
        install_observer(self.runtime, self.frontends)
        install_observer(self.runtime, self.reporter)
        install_observer(self.runtime, self.foreign)
        if not isinstance(self.server, LeanGrpcServer):
            await self.server.start()
        if self.server_tls is None and not _loopback(host):
            log.warning(
                "gRPC door on %s in plaintext: anyone who reaches it can enqueue for any "
                "tenant and take every tenant's queries; set GRPC_TLS_CERT_PATH and "
                "GRPC_TLS_KEY_PATH with GRPC_TLS_CA_PATH (docs/protocol-grpc.md, Security)",
                host,
            )
        log.info(
            "gRPC scheduler listening on %s:%d (%s, %s server, %s loop)",
            host,
            self.port,
            _security(self.server_tls),
            self.implementation,
            type(asyncio.get_running_loop()).__module__.split(".")[0],
        )
        return self.port

    async def stop(self, grace: float | None = 5.0) -> None:
        """Stop serving; open streams get `grace` seconds, then are cancelled.

        Querier streams waiting for work end first, with Cortex's "queue is
        stopped" (`QuerierLoopServicer.close`): cancelled after the grace,
        they were reset, which a Cortex querier logs as a broken stream.
        So do frontend loops with nothing in flight, with SHUTTING_DOWN and
        status OK (`FrontendLoopServicer.close`), rather than wait out the
        grace for a frontend that has nothing more to hear.
        """
        self.querier_loops.close()
        self.frontend_loops.close()
        await self.server.stop(grace)
        await self.reporter.close()


async def start_grpc_server(
    runtime: SchedulerRuntime,
    *,
    port: int,
    host: str = "127.0.0.1",
    admission: Admission | None = None,
    advertise_address: str | None = None,
    server_tls: ServerTls | None = None,
    client_tls: ClientTls | None = None,
    implementation: str | None = None,
    batch_writes: int = 1,
    max_connection_idle: float = 0.0,
) -> GrpcFrontDoor:
    """Start Cortex's scheduler services for `runtime` on the running loop.

    `advertise_address` is how queriers reach this process (for results of
    websocket-frontend requests); by default 127.0.0.1 and the bound port.
    `server_tls` makes the port TLS (mutual TLS when it carries a client CA);
    `client_tls` secures the calls to frontends' QueryResult.
    `implementation` is "lean" or "grpcio"; None reads GRPC_SERVER.
    `batch_writes`: the lean server's loop turns before a write (GRPC_WRITE_BATCHING).
    `max_connection_idle`: seconds a connection may have no open stream before
    GOAWAY, either server (GRPC_MAX_CONNECTION_IDLE_SECONDS); 0, the default, never.
    """
    door = GrpcFrontDoor(
        runtime,
        admission=admission,
        advertise_address=advertise_address,
        server_tls=server_tls,
        client_tls=client_tls,
        implementation=implementation,
        batch_writes=batch_writes,
        max_connection_idle=max_connection_idle,
    )
    await door.start(host=host, port=port)
    return door


def _loopback(host: str) -> bool:
    """Whether only this machine can reach `host` ("localhost" or a loopback address)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: it may resolve anywhere


def _security(server_tls: ServerTls | None) -> str:
    if server_tls is None:
        return "plaintext"
    if server_tls.client_ca is None:
        return "TLS"
    return f"TLS, client certificates: {server_tls.client_auth}"


def _methods(
    frontend: FrontendLoopServicer, querier: QuerierLoopServicer, foreign: ForeignRequests
) -> list[Method]:
    """Every method the door serves, for either server."""
    return [
        Method(
            "/schedulerpb.SchedulerForFrontend/FrontendLoop",
            True,
            pb.FrontendToScheduler.FromString,
            pb.SchedulerToFrontend.SerializeToString,
            frontend.FrontendLoop,
        ),
        Method(
            "/schedulerpb.SchedulerForQuerier/QuerierLoop",
            True,
            pb.QuerierToScheduler.FromString,
            pb.SchedulerToQuerier.SerializeToString,
            querier.QuerierLoop,
        ),
        Method(
            "/schedulerpb.SchedulerForQuerier/NotifyQuerierShutdown",
            False,
            pb.NotifyQuerierShutdownRequest.FromString,
            pb.NotifyQuerierShutdownResponse.SerializeToString,
            querier.NotifyQuerierShutdown,
        ),
        Method(
            "/frontendv2pb.FrontendForQuerier/QueryResult",
            False,
            frontendv2pb_pb2.QueryResultRequest.FromString,
            frontendv2pb_pb2.QueryResultResponse.SerializeToString,
            query_result(foreign),
        ),
    ]


def _grpcio_server(methods: list[Method], *, max_connection_idle: float = 0.0) -> grpc.aio.Server:
    options: list[tuple[str, Any]] = [
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        # Frontends and queriers keep streams open for hours and ping
        # them; allow their keepalives instead of answering GOAWAY.
        ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
        ("grpc.keepalive_permit_without_calls", 1),
    ]
    if max_connection_idle > 0:
        # grpc core's max_idle filter: GOAWAY once no call has been open this long.
        options.append(("grpc.max_connection_idle_ms", max(1, round(max_connection_idle * 1000))))
    server = grpc.aio.server(options=options)
    services: dict[str, dict[str, grpc.RpcMethodHandler]] = {}
    for m in methods:
        service, name = m.path.strip("/").split("/")
        if m.streaming:
            handler = grpc.stream_stream_rpc_method_handler(
                _unless_expired(m.handler),
                request_deserializer=m.deserialize,
                response_serializer=m.serialize,
            )
        else:
            # The request comes as bytes and is decoded in the handler: grpcio
            # decoding it would answer a malformed one INTERNAL with an error
            # log, where it is the client's INVALID_ARGUMENT (streams.py).
            handler = grpc.unary_unary_rpc_method_handler(
                _unless_expired(_decoding(m)), response_serializer=m.serialize
            )
        services.setdefault(service, {})[name] = handler
    server.add_generic_rpc_handlers(
        tuple(grpc.method_handlers_generic_handler(s, h) for s, h in services.items())
    )
    return server


def _unless_expired(
    handler: Callable[[Any, Any], Awaitable[Any]],
) -> Callable[[Any, Any], Awaitable[Any]]:
    """`handler`, not run for a call whose deadline is already over.

    grpc core may hand a call to the servicer before its deadline timer
    fires, even when the deadline passed on arrival (`grpc-timeout: 0n`): a
    frontend loop then read its INIT, registered the frontend and sent OK on
    a call the client had already given up (a CI flake in session 44). The
    lean door refuses such a call before the servicer as well (lean_server).
    """

    async def handle(request: Any, context: Any) -> Any:
        remaining = context.time_remaining()
        if remaining is not None and remaining <= 0:
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")
        return await handler(request, context)

    return handle


def _decoding(method: Method) -> Callable[[bytes, Any], Awaitable[Any]]:
    """`method`'s unary handler taking the undecoded request."""

    async def handle(payload: bytes, context: Any) -> Any:
        try:
            request = method.deserialize(payload)
        except DecodeError as exc:
            refused = malformed(exc)
            await context.abort(refused.code, refused.details)
        return await method.handler(request, context)

    return handle
