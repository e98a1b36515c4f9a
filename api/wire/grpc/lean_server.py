"""gRPC over our own HTTP/2 connection (`http2.py`), on the running event loop.

Serves the door's methods with the same servicers grpcio runs: each call's
context has grpcio's `read()` (a message, or `grpc.aio.EOF`), `write()`,
`abort()`, `auth_context()` and `invocation_metadata()`, and a call the peer
resets, or whose connection drops, has its task cancelled, as grpcio does.

What gRPC adds over HTTP/2 is here: the method table by `:path`, the
5-byte length prefix, messages compressed with `gzip` or `deflate` (what
grpc-go's and grpcio's compressors send; Cortex clients may enable gzip),
the receive and send size limits (RESOURCE_EXHAUSTED, on that call only),
status trailers, and the server's start and `stop(grace)`: GOAWAY, let
calls finish for `grace` seconds, cancel the rest, close.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import zlib
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import grpc

from api.wire.grpc.http2 import Http2Connection
from api.wire.grpc.http2_frames import (
    CANCEL,
    NO_ERROR,
    STREAM_WINDOW,
    Http2Stream,
    encode_headers,
)

__all__ = ["AbortError", "LeanCall", "LeanGrpcServer", "Method"]

log = logging.getLogger(__name__)

_ENCODINGS = ("gzip", "deflate")
_ACCEPT_ENCODING = "identity,deflate,gzip"
_HEADERS = encode_headers(
    [
        (":status", "200"),
        ("content-type", "application/grpc"),
        ("grpc-accept-encoding", _ACCEPT_ENCODING),
    ]
)
_OK_TRAILERS = encode_headers([("grpc-status", "0")])
_EOF = grpc.aio.EOF


@dataclass(frozen=True, slots=True)
class Method:
    """One served method: stream-stream (`handler(call, call)`) or unary-unary."""

    path: str
    streaming: bool
    deserialize: Callable[[bytes], Any]
    serialize: Callable[[Any], bytes]
    handler: Callable[[Any, Any], Awaitable[Any]]


class AbortError(Exception):
    """Ends the call with `code` and `details` (what `context.abort` raises)."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code = code
        self.details = details


class LeanCall:
    """One call: the servicer's context and its message stream."""

    __slots__ = (
        "_buffer",
        "_conn",
        "_encoding",
        "_error",
        "_held",
        "_messages",
        "_method",
        "_sent_headers",
        "_unread",
        "_waiter",
        "ended",
        "headers",
        "stream",
        "task",
    )

    def __init__(
        self, conn: GrpcConnection, stream: Http2Stream, method: Method, headers: dict[str, str]
    ) -> None:
        self._conn = conn
        self.stream = stream
        self._method = method
        self.headers = headers
        self._encoding = headers.get("grpc-encoding", "identity")
        self._buffer = bytearray()
        self._messages: deque[tuple[int, bytes]] = deque()  # (compressed flag, payload)
        # Bytes of whole messages not yet read, and bytes received but not yet
        # granted back to the peer's windows (held while too much is unread).
        self._unread = 0
        self._held = 0
        self._waiter: asyncio.Future[None] | None = None
        self._sent_headers = False
        self._error: AbortError | None = None
        self.ended = False
        self.task: asyncio.Task[None] | None = None

    # -- grpc.aio.ServicerContext, the parts the servicers use ---------------------

    async def read(self) -> Any:
        """The next message, or grpc.aio.EOF once the peer half-closed."""
        while not self._messages:
            if self._error is not None:
                raise self._error
            if self.ended:
                return _EOF
            self._waiter = self._conn.loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        flag, payload = self._messages.popleft()
        self._unread -= len(payload) + 5
        if self._held and self._unread <= STREAM_WINDOW:
            held, self._held = self._held, 0
            self._conn.consumed(self.stream, held)
        if flag:
            payload = self._decompress(payload)
        return self._method.deserialize(payload)

    async def write(self, message: Any) -> None:
        data = self._method.serialize(message)
        limit = self._conn.server.max_message
        if len(data) > limit:
            raise AbortError(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"response of {len(data)} bytes is larger than the limit of {limit}",
            )
        conn, stream = self._conn, self.stream
        if not self._sent_headers:
            self._sent_headers = True
            conn.send_headers(stream, _HEADERS)
        if not conn.send_data(stream, b"\x00" + len(data).to_bytes(4, "big") + data):
            await conn.wait_sent()

    async def abort(self, code: grpc.StatusCode, details: str = "") -> None:
        raise AbortError(code, details)

    def auth_context(self) -> dict[str, list[bytes]]:
        return self._conn.auth_context()

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return tuple((k, v) for k, v in self.headers.items() if not k.startswith(":"))

    def peer(self) -> str:
        return self._conn.peer()

    def __aiter__(self) -> LeanCall:
        return self

    async def __anext__(self) -> Any:
        message = await self.read()
        if message is _EOF:
            raise StopAsyncIteration
        return message

    # -- from the connection ----------------------------------------------------------

    def data(self, payload: bytes, end: bool) -> None:
        """Bytes of the stream; whole messages queue for `read`.

        The peer's windows are re-opened as bytes arrive (a message may be
        larger than a window) unless more than a window of whole messages
        waits unread: then they re-open as `read` takes them, so a peer that
        sends faster than the servicer reads is held back.
        """
        if payload:
            self._receive(payload)
            if self._unread <= STREAM_WINDOW:
                self._conn.consumed(self.stream, self._held + len(payload))
                self._held = 0
            else:
                self._held += len(payload)
        if end:
            self.ended = True
        self._wake()

    def _receive(self, payload: bytes) -> None:
        buf = self._buffer
        if (
            not buf
            and len(payload) >= 5
            and int.from_bytes(payload[1:5], "big") == len(payload) - 5
        ):
            self._take(payload[0], payload[5:])  # one whole message per frame: no copy
        else:
            buf += payload
            while len(buf) >= 5:
                size = int.from_bytes(buf[1:5], "big")
                if size > self._conn.server.max_message:
                    self._too_large(size)
                    return
                if len(buf) < 5 + size:
                    break
                self._take(buf[0], bytes(buf[5 : 5 + size]))
                del buf[: 5 + size]

    def _take(self, flag: int, payload: bytes) -> None:
        if len(payload) > self._conn.server.max_message:
            self._too_large(len(payload))
            return
        self._messages.append((flag, payload))
        self._unread += len(payload) + 5

    def _too_large(self, size: int) -> None:
        limit = self._conn.server.max_message
        self.finish(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            f"received message larger than max ({size} vs. {limit})",
        )
        if self.task is not None:
            self.task.cancel()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _decompress(self, payload: bytes) -> bytes:
        if self._encoding not in _ENCODINGS:
            raise AbortError(grpc.StatusCode.INTERNAL, "compressed message without a grpc-encoding")
        limit = self._conn.server.max_message
        inflater = zlib.decompressobj(31 if self._encoding == "gzip" else 15)
        try:
            data = inflater.decompress(payload, limit + 1)
        except zlib.error as exc:
            raise AbortError(
                grpc.StatusCode.INTERNAL, f"bad {self._encoding} data: {exc}"
            ) from None
        if len(data) > limit:
            raise AbortError(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"received message larger than max after decompression (limit {limit})",
            )
        return data

    def finish(self, code: grpc.StatusCode, details: str = "") -> None:
        """Send the status (trailers-only if nothing was sent); reset a still-open peer side."""
        conn, stream = self._conn, self.stream
        if stream.local_closed:
            return
        if code is grpc.StatusCode.OK and self._sent_headers:
            block = _OK_TRAILERS
        else:
            fields = (
                []
                if self._sent_headers
                else [(":status", "200"), ("content-type", "application/grpc")]
            )
            fields.append(("grpc-status", str(code.value[0])))
            if details:
                fields.append(
                    ("grpc-message", quote(details, safe=" !\"#$&'()*+,-./:;<=>?@[\\]^_`{|}~"))
                )
            block = encode_headers(fields)
        conn.send_headers(stream, block, end=True)
        if not stream.remote_closed:
            # The client may still be sending: tell it to stop (as grpc-go does).
            conn.reset(stream, NO_ERROR)


class GrpcConnection(Http2Connection):
    """One client connection of the lean server."""

    def __init__(self, server: LeanGrpcServer) -> None:
        super().__init__(batch_writes=server.batch_writes)
        self.server = server
        self._auth: dict[str, list[bytes]] | None = None
        self._encodings_seen: set[str] = set()

    def stream_opened(self, stream: Http2Stream, headers: dict[str, str], end: bool) -> None:
        method = self.server.methods.get(headers.get(":path", ""))
        if headers.get(":method") != "POST":
            self.send_headers(stream, encode_headers([(":status", "405")]), end=True)
            self.reset(stream, NO_ERROR)
            return
        if not headers.get("content-type", "").startswith("application/grpc"):
            self.send_headers(stream, encode_headers([(":status", "415")]), end=True)
            self.reset(stream, NO_ERROR)
            return
        call = LeanCall(self, stream, method or _UNKNOWN, headers)
        stream.app = call
        if method is None:
            call.finish(grpc.StatusCode.UNIMPLEMENTED, f"unknown method {headers.get(':path')}")
            return
        encoding = headers.get("grpc-encoding", "identity")
        if encoding != "identity" and encoding not in _ENCODINGS:
            call.finish(
                grpc.StatusCode.UNIMPLEMENTED,
                f"grpc-encoding {encoding} is not supported (use gzip or none)",
            )
            return
        if encoding != "identity" and encoding not in self._encodings_seen:
            self._encodings_seen.add(encoding)
            log.info("%s sends %s-compressed messages", self.peer(), encoding)
        if end:
            call.ended = True
        call.task = self.loop.create_task(_run(call, method))
        self.server.calls.add(call.task)
        call.task.add_done_callback(self.server.calls.discard)

    def stream_data(self, stream: Http2Stream, payload: bytes, end: bool) -> None:
        call = stream.app
        if call is not None:
            call.data(payload, end)

    def stream_reset(self, stream: Http2Stream, code: int) -> None:
        call = stream.app
        if call is not None and call.task is not None:
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
    except asyncio.CancelledError:
        # Reset by the peer, its connection gone, or the server stopping.
        if not call.stream.local_closed:
            call._conn.reset(call.stream, CANCEL)
        return
    except Exception as exc:
        log.exception("gRPC method %s failed", method.path)
        code, details = grpc.StatusCode.UNKNOWN, f"{type(exc).__name__}: {exc}"
    call.finish(code, details)


class LeanGrpcServer:
    """Listens on one port; plaintext, or TLS with `ssl_context`."""

    def __init__(
        self,
        methods: list[Method],
        *,
        max_message: int,
        ssl_context: ssl.SSLContext | None = None,
        batch_writes: int = 1,
    ) -> None:
        self.methods = {m.path: m for m in methods}
        self.max_message = max_message
        self.batch_writes = batch_writes
        self._ssl = ssl_context
        self._server: asyncio.Server | None = None
        self.connections: set[GrpcConnection] = set()
        self.calls: set[asyncio.Task[None]] = set()

    def _connection(self) -> GrpcConnection:
        conn = GrpcConnection(self)
        self.connections.add(conn)
        return conn

    async def start(self, host: str, port: int) -> int:
        """Bind and serve; returns the bound port. OSError if it cannot bind."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self._connection, host or None, port, ssl=self._ssl, backlog=1024
        )
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
