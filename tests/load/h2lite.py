"""Just enough HTTP/2 to speak gRPC from the benchmark, without grpcio.

The benchmark's clients stand in for Cortex's Go query-frontends and
queriers, which spend a few tens of microseconds per request; `grpc.aio`
clients spend over 500, so on a 2-core machine they, not the scheduler, set
the gRPC figure. This module and `h2lite_connection` are the wire only:
frames, flow control, headers and gRPC's length-prefixed messages, on an
asyncio Protocol.

Both directions keep to RFC 9113: the peer's SETTINGS and windows are
honoured (DATA waits for WINDOW_UPDATE when a window is spent), PINGs are
answered, CONTINUATION is reassembled. Header blocks are decoded with the
`hpack` package (grpcio's encoder uses the dynamic table and Huffman codes)
and encoded as literals that are never indexed, so our encoder keeps no
state the peer could disagree with. The connection both ends share (frames,
windows, streams) is in `h2lite_connection`; the client and server are here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

# The wire basics are the lean door's own (one definition of RFC 9113's numbers).
from api.wire.grpc.http2_frames import (
    ACK,
    CONTINUATION,
    DATA,
    END_HEADERS,
    END_STREAM,
    HEADERS,
    PING,
    PREFACE,
    RST_STREAM,
    S_INITIAL_WINDOW_SIZE,
    SETTINGS,
    WINDOW_UPDATE,
    encode_headers,
    frame,
)
from tests.load.h2lite_connection import (
    Connection,
    GrpcCallError,
    Stream,
    StreamReset,
    grpc_message,
)

__all__ = [
    "ACK",
    "CONTINUATION",
    "DATA",
    "END_HEADERS",
    "END_STREAM",
    "HEADERS",
    "PING",
    "RST_STREAM",
    "SETTINGS",
    "S_INITIAL_WINDOW_SIZE",
    "WINDOW_UPDATE",
    "ClientConnection",
    "GrpcCallError",
    "ServerConnection",
    "Stream",
    "StreamReset",
    "encode_headers",
    "frame",
    "grpc_message",
]


class ClientConnection(Connection):
    """A client's connection: opens streams with odd ids."""

    def __init__(self, authority: str) -> None:
        super().__init__()
        self.authority = authority
        self._next_id = 1
        self._blocks: dict[tuple[str, tuple[tuple[str, str], ...]], bytes] = {}

    @classmethod
    async def connect(cls, address: str) -> ClientConnection:
        host, _, port = address.rpartition(":")
        loop = asyncio.get_running_loop()
        _, conn = await loop.create_connection(lambda: cls(address), host, int(port))
        conn.write(PREFACE + conn.open_settings())
        return conn

    def open_stream(self, path: str, metadata: tuple[tuple[str, str], ...] = ()) -> Stream:
        """Start a call; its request headers are sent at once."""
        key = (path, metadata)
        block = self._blocks.get(key)
        if block is None:
            block = self._blocks[key] = encode_headers(
                [
                    (":method", "POST"),
                    (":scheme", "http"),
                    (":path", path),
                    (":authority", self.authority),
                    ("content-type", "application/grpc"),
                    ("te", "trailers"),
                    *metadata,
                ]
            )
        stream = Stream(self, self._next_id, self._peer_initial_window)
        self._next_id += 2
        self.streams[stream.id] = stream
        self.send_headers(stream, block)
        return stream

    async def unary(
        self, path: str, request: bytes, metadata: tuple[tuple[str, str], ...] = ()
    ) -> bytes:
        """One request, one response; raises GrpcCallError on a non-zero status."""
        stream = self.open_stream(path, metadata)
        stream.send(request, end=True)
        response = await stream.recv()
        if response is None:
            raise GrpcCallError(13, "no response message")
        await stream.recv()
        return response


Handler = Callable[[str, dict[str, str], bytes], Awaitable[bytes]]

_RESPONSE_HEADERS = encode_headers([(":status", "200"), ("content-type", "application/grpc")])
_OK_TRAILERS = encode_headers([("grpc-status", "0")])


class ServerConnection(Connection):
    """A server's connection for unary methods: `handler(path, headers, request)`.

    The handler's exception ends that call with UNKNOWN; the connection and
    its other calls go on.
    """

    def __init__(self, handler: Handler) -> None:
        super().__init__()
        self._handler = handler
        self._preface_seen = False
        self._tasks: set[asyncio.Task[None]] = set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.write(self.open_settings())

    def data_received(self, data: bytes) -> None:
        if not self._preface_seen:
            self._inbox += data
            if len(self._inbox) < len(PREFACE):
                return
            if bytes(self._inbox[: len(PREFACE)]) != PREFACE:
                self.close()
                return
            self._preface_seen = True
            data = bytes(self._inbox[len(PREFACE) :])
            self._inbox.clear()
        super().data_received(data)

    def header_block(self, stream_id: int, fields: dict[str, str], end: bool) -> None:
        if stream_id not in self.streams:
            self.streams[stream_id] = Stream(self, stream_id, self._peer_initial_window)
        super().header_block(stream_id, fields, end)

    def _end_of_stream(self, stream: Stream) -> None:
        # The request is complete; the stream stays open for our response.
        stream.ended = True
        task = self.loop.create_task(self._answer(stream))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(self, stream: Stream) -> None:
        request = stream._messages.popleft() if stream._messages else b""
        try:
            response = await self._handler(stream.headers.get(":path", ""), stream.headers, request)
        except Exception as exc:  # noqa: BLE001 - reported to the caller as UNKNOWN
            trailers = [(":status", "200"), ("content-type", "application/grpc")]
            trailers += [("grpc-status", "2"), ("grpc-message", str(exc)[:200])]
            self.send_headers(stream, encode_headers(trailers), end=True)
            self.streams.pop(stream.id, None)
        else:
            self.send_headers(stream, _RESPONSE_HEADERS)
            self.send_data(stream, grpc_message(response), False, _OK_TRAILERS)
