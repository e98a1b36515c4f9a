"""gRPC over our own HTTP/2 connection (`http2.py`), on the running event loop.

Serves the door's methods with the same servicers grpcio runs: each call's
context (`lean_call.LeanCall`) has what grpcio's has, and a call the peer
resets, or whose connection drops, has its task cancelled, as grpcio does.

Here: the method table by `:path`, refusing what is not a gRPC POST or uses
an encoding other than `gzip` or `deflate` (what grpc-go's and grpcio's
compressors send; Cortex clients may enable gzip), the mutual-TLS identity,
the `grpc-timeout` a client may set (malformed: refused with INTERNAL as
grpc-go does; passed: DEADLINE_EXCEEDED, the call's task cancelled as for a
disconnect), and the server's start and `stop(grace)`: GOAWAY, let calls
finish for `grace` seconds, cancel the rest, close. A connection with no
open stream for `max_connection_idle` seconds is sent away (`http2_idle.py`).
The call itself (framing, size limits, flow control, status trailers) is
`lean_call.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import ssl
from asyncio import sslproto
from collections.abc import Callable
from typing import Any

import grpc
from google.protobuf.message import DecodeError

from api.wire.grpc.http2 import Http2Connection
from api.wire.grpc.http2_frames import (
    CANCEL,
    NO_ERROR,
    PROTOCOL_ERROR,
    Http2Stream,
    encode_headers,
)
from api.wire.grpc.lean_call import ENCODINGS, AbortError, LeanCall, Method, status_fields
from api.wire.grpc.streams import malformed
from api.wire.grpc.tls_handshakes import HandshakeFailures

__all__ = ["AbortError", "LeanCall", "LeanGrpcServer", "Method", "grpc_timeout"]

log = logging.getLogger(__name__)

_EOF = grpc.aio.EOF


class GrpcConnection(Http2Connection):
    """One client connection of the lean server."""

    def __init__(self, server: LeanGrpcServer) -> None:
        super().__init__(
            batch_writes=server.batch_writes, max_connection_idle=server.max_connection_idle
        )
        self.server = server
        self._auth: dict[str, list[bytes]] | None = None
        self._encodings_seen: set[str] = set()

    def stream_opened(self, stream: Http2Stream, headers: dict[str, str], end: bool) -> None:
        method = self.server.methods.get(headers[":path"])
        if headers[":method"] != "POST":
            problem = f":method {headers[':method']} (gRPC calls are POST)"
            self._refuse(stream, "405", grpc.StatusCode.INTERNAL, problem, NO_ERROR)
            return
        content_type = headers.get("content-type", "")
        if not _is_grpc(content_type):
            problem = f"content-type {content_type!r} is not application/grpc"
            self._refuse(stream, "415", grpc.StatusCode.INVALID_ARGUMENT, problem, NO_ERROR)
            return
        timeout = headers.get("grpc-timeout")
        seconds = None
        if timeout is not None:
            seconds = grpc_timeout(timeout)
            if seconds is None:
                # grpc-go's answer; grpcio's differs only in HTTP status 200.
                problem = f"malformed grpc-timeout {timeout!r}: {_TIMEOUT_FORMAT}"
                self._refuse(stream, "400", grpc.StatusCode.INTERNAL, problem, NO_ERROR)
                return
        call = LeanCall(self, stream, method or _UNKNOWN, headers)
        stream.app = call
        if seconds == 0:
            _expire(call)  # already over, as grpc-go answers: the servicer never runs
            return
        if method is None:
            call.finish(grpc.StatusCode.UNIMPLEMENTED, f"unknown method {headers.get(':path')}")
            return
        encoding = headers.get("grpc-encoding", "identity")
        if encoding != "identity" and encoding not in self._encodings_seen:
            # Once per connection: a Cortex client with -*.grpc-compression=snappy
            # (or zstd) retries every call, and only its own log said why.
            self._encodings_seen.add(encoding)
            if encoding in ENCODINGS:
                log.info("%s sends %s-compressed messages", self.peer(), encoding)
            else:
                log.warning(
                    "%s sends %s-compressed messages, which the door cannot read: its calls "
                    "are refused with UNIMPLEMENTED (its -*.grpc-compression must be gzip or "
                    "empty)",
                    self.peer(),
                    encoding,
                )
        if encoding != "identity" and encoding not in ENCODINGS:
            call.finish(
                grpc.StatusCode.UNIMPLEMENTED,
                f"grpc-encoding {encoding} is not supported (use gzip or none)",
            )
            return
        if end:
            call.ended = True
        call.task = self.loop.create_task(_run(call, method))
        self.server.calls.add(call.task)
        call.task.add_done_callback(self.server.calls.discard)
        if seconds is not None:
            # One timer per call, nothing per message. Frames still waiting on
            # the peer's window when the servicer ends keep it: past the
            # deadline they go no further.
            timer = call.deadline = self.loop.call_later(seconds, _expire, call)
            call.task.add_done_callback(lambda _: None if stream.queued else timer.cancel())

    def stream_malformed(self, stream: Http2Stream, problem: str) -> None:
        self._refuse(
            stream, "400", grpc.StatusCode.INTERNAL, f"malformed request: {problem}", PROTOCOL_ERROR
        )

    def _refuse(
        self, stream: Http2Stream, http: str, code: grpc.StatusCode, details: str, rst: int
    ) -> None:
        """Answer a stream no call is made for, as grpc-go does: an HTTP status
        with the gRPC status, then RST_STREAM if the client may still send."""
        fields = [(":status", http), ("content-type", "application/grpc")]
        self.send_headers(stream, encode_headers(fields + status_fields(code, details)), end=True)
        if not stream.remote_closed:
            self.reset(stream, rst)

    def stream_data(self, stream: Http2Stream, payload: bytes, end: bool) -> None:
        call = stream.app
        if call is not None:
            call.data(payload, end)

    def stream_reset(self, stream: Http2Stream, code: int) -> None:
        call = stream.app
        if call is not None:
            call.release()
            if call.task is not None:
                call.task.cancel()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.server.connections.discard(self)

    def auth_context(self) -> dict[str, list[bytes]]:
        """grpcio's keys: the verified client certificate's common names."""
        if self._auth is None:
            self._auth = {}
            assert self.transport is not None
            cert = self.transport.get_extra_info("peercert")
            if cert:
                names = [
                    value.encode()
                    for rdn in cert.get("subject", ())
                    for key, value in rdn
                    if key == "commonName"
                ]
                if names:
                    self._auth["x509_common_name"] = names
                self._auth["transport_security_type"] = [b"ssl"]
        return self._auth

    def peer(self) -> str:
        assert self.transport is not None
        host, port = self.transport.get_extra_info("peername")[:2]
        return f"ipv{6 if ':' in host else 4}:{host}:{port}"


# gRPC's TimeoutValue is 1 to 8 ASCII digits; grpc-go refuses more (grpcio takes them).
_TIMEOUT_UNITS = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}
_TIMEOUT_FORMAT = "expected 1 to 8 digits and a unit (H, M, S, m, u or n)"


def grpc_timeout(value: str) -> float | None:
    """The seconds a `grpc-timeout` header gives the call; None if it is malformed."""
    digits, unit = value[:-1], value[-1:]
    if not 1 <= len(digits) <= 8 or not (digits.isascii() and digits.isdigit()):
        return None
    scale = _TIMEOUT_UNITS.get(unit)
    return None if scale is None else int(digits) * scale


def _is_grpc(content_type: str) -> bool:
    """grpc-go's test: application/grpc, or it with a +subtype or ;parameters."""
    return content_type == "application/grpc" or content_type.startswith(
        ("application/grpc+", "application/grpc;")
    )


async def _unknown(request: Any, context: Any) -> None:  # pragma: no cover - never run
    raise AbortError(grpc.StatusCode.UNIMPLEMENTED, "unknown method")


_UNKNOWN = Method("", False, bytes, bytes, _unknown)


async def _run(call: LeanCall, method: Method) -> None:
    code, details = grpc.StatusCode.OK, ""
    try:
        if method.streaming:
            await method.handler(call, call)
        else:
            request = await call.read()
            if request is _EOF:
                raise AbortError(grpc.StatusCode.INTERNAL, "no request message")
            response = await method.handler(request, call)
            await call.write(response)
    except AbortError as exc:
        code, details = exc.code, exc.details
    except DecodeError as exc:
        # A unary request that is not its message: the client's error, as on a stream.
        refused = malformed(exc)
        code, details = refused.code, refused.details
    except asyncio.CancelledError:
        # Reset by the peer, its connection gone, or the server stopping.
        if not call.stream.local_closed and not call.finished:
            call._conn.reset(call.stream, CANCEL)
        return
    except Exception as exc:
        log.exception("gRPC method %s failed", method.path)
        code, details = grpc.StatusCode.UNKNOWN, f"{type(exc).__name__}: {exc}"
    call.finish(code, details)


def _expire(call: LeanCall) -> None:
    """The deadline passed: DEADLINE_EXCEEDED then RST_STREAM, as grpcio
    answers, and the servicer cancelled exactly as when the client
    disconnects, so what its stream owns ends the same way."""
    if call.stream.queued:
        # The status may not overtake replies waiting on the peer's window,
        # and they are of no use now: reset, as grpc-go does.
        call.release()
        call._conn.reset(call.stream, CANCEL)
    else:
        call.finish(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")
    if call.task is not None:
        call.task.cancel()


def _tls_protocol(loop: asyncio.AbstractEventLoop) -> Callable[..., asyncio.BaseProtocol]:
    """The loop's own SSLProtocol (uvloop's is compiled), as `create_server(ssl=)` takes."""
    if type(loop).__module__.startswith("uvloop"):
        import uvloop.loop

        return _remembering_peer(uvloop.loop.SSLProtocol)  # type: ignore[attr-defined]
    return _remembering_peer(sslproto.SSLProtocol)


@functools.cache
def _remembering_peer(base: type[Any]) -> Callable[..., asyncio.BaseProtocol]:
    class Handshake(base):  # type: ignore[misc, valid-type]
        """Keeps the client's address, to name it if the handshake fails."""

        peer: tuple[str, int] = ("?", 0)

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.peer = tuple(transport.get_extra_info("peername")[:2])
            super().connection_made(transport)

    return Handshake


class LeanGrpcServer:
    """Listens on one port; plaintext, or TLS with `ssl_context`.

    With TLS, each connection's TLS layer is made here, as
    `create_server(ssl=...)` makes it, but with a handshake waiter of our
    own: the loop drops a failed handshake silently and never tells the
    HTTP/2 connection, which then stayed in `connections` for good;
    `handshake_failures` says in the log why the client was refused, and
    counts it (`queue_inspector_grpc_tls_handshake_failures_total`).
    """

    def __init__(
        self,
        methods: list[Method],
        *,
        max_message: int,
        ssl_context: ssl.SSLContext | None = None,
        batch_writes: int = 1,
        max_connection_idle: float = 0.0,
    ) -> None:
        self.methods = {m.path: m for m in methods}
        self.max_message = max_message
        self.batch_writes = batch_writes
        # Seconds a connection may have no open stream before GOAWAY (0: for ever).
        self.max_connection_idle = max_connection_idle
        self._ssl = ssl_context
        self._server: asyncio.Server | None = None
        self.connections: set[GrpcConnection] = set()
        self.calls: set[asyncio.Task[None]] = set()
        self.handshake_failures = HandshakeFailures()

    def _connection(self) -> GrpcConnection:
        conn = GrpcConnection(self)
        self.connections.add(conn)
        return conn

    def _accept(self) -> asyncio.BaseProtocol:
        conn = self._connection()
        if self._ssl is None:
            return conn
        waiter = conn.loop.create_future()
        tls = _tls_protocol(conn.loop)(
            conn.loop, conn, self._ssl, waiter, server_side=True, ssl_handshake_timeout=60.0
        )
        waiter.add_done_callback(functools.partial(self._handshaken, conn, tls))
        return tls

    def _handshaken(self, conn: GrpcConnection, tls: Any, waiter: asyncio.Future[None]) -> None:
        if conn.transport is not None:
            return  # up: the connection is the HTTP/2 layer's from here on
        self.connections.discard(conn)
        exc = None if waiter.cancelled() else waiter.exception()
        if exc is not None:  # else the client closed before finishing a handshake
            host, port = tls.peer
            self.handshake_failures.failed(host, port, exc)

    async def start(self, host: str, port: int) -> int:
        """Bind and serve; returns the bound port. OSError if it cannot bind."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._accept, host or None, port, backlog=1024)
        return int(self._server.sockets[0].getsockname()[1])

    async def stop(self, grace: float | None) -> None:
        """GOAWAY to every connection, `grace` seconds for calls, then cancel them."""
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections):
            conn.goaway()
        if grace and self.calls:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*self.calls, return_exceptions=True), grace)
        for task in list(self.calls):
            task.cancel()
        if self.calls:
            await asyncio.gather(*self.calls, return_exceptions=True)
        for conn in list(self.connections):
            conn.close()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 1.0)
