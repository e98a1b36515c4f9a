"""Unary gRPC calls over our HTTP/2 layer: the scheduler's `QueryResult` to frontends.

The scheduler calls a frontend only when it answers a request itself (it
gave up on it, shutdown failed it, a rejection rule refused it with 422) or
when a websocket querier ran a Cortex frontend's request. One connection per
frontend address, reused, on the scheduler's own loop: no grpcio channel and
so none of grpcio's threads. TLS with `ClientTls` (the GRPC_CLIENT_TLS_*
settings): the CA to trust (else the system's roots), a client certificate
for frontends that require one, the name to check (else the dialled host),
ALPN `h2` as grpc-go's servers require.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import OrderedDict
from urllib.parse import unquote

from api.wire.grpc.http2 import Http2Connection
from api.wire.grpc.http2_frames import CANCEL, Http2Stream, encode_headers
from api.wire.grpc.tls import ClientTls, load_key_pair

__all__ = ["GrpcCallError", "LeanChannels", "client_ssl_context"]

_MAX_CONNECTIONS = 64  # open connections kept for recently called frontends
# QueryResultResponse is empty: a peer sending more than this is not a
# frontend, and what it sends must not pile up until the call's timeout.
_MAX_RESPONSE = 1 << 20


class GrpcCallError(Exception):
    """The call failed: `code` is its grpc-status (14 UNAVAILABLE when unreachable)."""

    def __init__(self, code: int, details: str) -> None:
        super().__init__(f"grpc-status {code}: {details}")
        self.code = code
        self.details = details


def client_ssl_context(tls: ClientTls) -> ssl.SSLContext:
    context = ssl.create_default_context(
        cadata=tls.ca.decode("ascii") if tls.ca is not None else None
    )
    if tls.ca is None:
        context.load_default_certs()
    context.set_alpn_protocols(["h2"])
    if tls.certificate_chain is not None and tls.private_key is not None:
        load_key_pair(context, tls.certificate_chain, tls.private_key)
    return context


class _Call:
    __slots__ = ("body", "done", "headers", "trailers")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.headers: dict[str, str] = {}
        self.trailers: dict[str, str] = {}
        self.body = bytearray()
        self.done: asyncio.Future[None] = loop.create_future()


class _ClientConnection(Http2Connection):
    def __init__(self) -> None:
        super().__init__(client=True)
        self.lost: asyncio.Future[None] = self.loop.create_future()

    def stream_headers(self, stream: Http2Stream, headers: dict[str, str], end: bool) -> None:
        call: _Call = stream.app
        if call.headers:
            call.trailers = headers
        else:
            call.headers = headers
        if end and not call.done.done():
            call.done.set_result(None)

    def stream_data(self, stream: Http2Stream, payload: bytes, end: bool) -> None:
        call: _Call = stream.app
        call.body += payload
        self.consumed(stream, len(payload))
        if len(call.body) > _MAX_RESPONSE:
            self.reset(stream, CANCEL)
            if not call.done.done():
                error = GrpcCallError(8, f"response over {_MAX_RESPONSE} bytes")
                call.done.set_exception(error)
            return
        if end and not call.done.done():
            call.done.set_result(None)

    def stream_reset(self, stream: Http2Stream, code: int) -> None:
        call: _Call | None = stream.app
        if call is not None and not call.done.done():
            call.done.set_exception(GrpcCallError(14, f"stream reset (HTTP/2 code {code})"))

    def stream_opened(self, stream: Http2Stream, headers: dict[str, str], end: bool) -> None:
        self.reset(stream, CANCEL)  # never called for a client; servers do not open streams

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if not self.lost.done():
            self.lost.set_result(None)

    @property
    def usable(self) -> bool:
        return not self._closed and not self._going_away and not self.lost.done()


class LeanChannels:
    """Connections to frontends by address; `unary` makes one call."""

    def __init__(self, tls: ClientTls | None) -> None:
        self._tls = tls
        self._ssl = client_ssl_context(tls) if tls is not None else None
        self._connections: OrderedDict[str, _ClientConnection] = OrderedDict()

    async def unary(
        self,
        address: str,
        path: str,
        request: bytes,
        metadata: tuple[tuple[str, str], ...],
        timeout: float,
    ) -> bytes:
        """The response message; GrpcCallError on any failure, timeouts included."""
        try:
            return await asyncio.wait_for(
                self._unary(address, path, request, metadata, timeout), timeout
            )
        except TimeoutError:
            raise GrpcCallError(4, "deadline exceeded") from None
        except (OSError, ssl.SSLError) as exc:
            raise GrpcCallError(14, f"cannot reach {address}: {exc}") from None

    async def _unary(
        self,
        address: str,
        path: str,
        request: bytes,
        metadata: tuple[tuple[str, str], ...],
        timeout: float,
    ) -> bytes:
        conn = await self._connection(address)
        stream = conn.open_stream()
        call = _Call(conn.loop)
        stream.app = call
        headers = [
            (":method", "POST"),
            (":scheme", "https" if self._ssl is not None else "http"),
            (":path", path),
            (":authority", address),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("grpc-timeout", f"{max(1, int(timeout * 1000))}m"),
            *metadata,
        ]
        conn.send_headers(stream, encode_headers(headers))
        try:
            if not conn.send_data(
                stream, b"\x00" + len(request).to_bytes(4, "big") + request, end=True
            ):
                await conn.wait_sent(stream)
            lost = conn.lost
            await asyncio.wait({call.done, lost}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not call.done.done():
                # Abandoned (its deadline, or the connection went): RST_STREAM
                # CANCEL, as grpc-go and grpcio send at a client's deadline. A
                # frontend that hangs keeps its connection open, so left open
                # the stream would stay until that connection closes, and its
                # reset would then fail a future no one awaits any more.
                conn.reset(stream, CANCEL)
        if not call.done.done():
            raise GrpcCallError(14, "connection closed")
        call.done.result()
        return _response(call)

    async def _connection(self, address: str) -> _ClientConnection:
        conn = self._connections.pop(address, None)
        if conn is None or not conn.usable:
            host, _, port = address.rpartition(":")
            server_name = (self._tls.server_name if self._tls else "") or host.strip("[]")
            loop = asyncio.get_running_loop()
            _, conn = await loop.create_connection(
                _ClientConnection,
                host.strip("[]"),
                int(port),
                ssl=self._ssl,
                server_hostname=server_name if self._ssl is not None else None,
            )
            ssl_object = conn.transport.get_extra_info("ssl_object") if conn.transport else None
            if ssl_object is not None and ssl_object.selected_alpn_protocol() != "h2":
                conn.close()
                raise GrpcCallError(14, f"{address} does not speak HTTP/2 over TLS (ALPN)")
        self._connections[address] = conn
        while len(self._connections) > _MAX_CONNECTIONS:
            _, oldest = self._connections.popitem(last=False)
            oldest.goaway()
            oldest.close()
        return conn

    def close(self) -> None:
        for conn in self._connections.values():
            conn.goaway()
            conn.close()
        self._connections.clear()


def _response(call: _Call) -> bytes:
    status = call.headers.get(":status", "")
    fields = call.trailers or call.headers
    if status != "200":
        raise GrpcCallError(14 if status in ("502", "503", "504") else 2, f"HTTP status {status}")
    code = int(fields.get("grpc-status", "2") or 2)
    if code:
        raise GrpcCallError(code, unquote(fields.get("grpc-message", "")))
    body = bytes(call.body)
    if len(body) < 5:
        raise GrpcCallError(13, "no response message")
    if body[0]:
        raise GrpcCallError(13, "compressed response, none was asked for")
    return body[5 : 5 + int.from_bytes(body[1:5], "big")]
