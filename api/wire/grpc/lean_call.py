"""One gRPC call of the lean server (`lean_server.py`): the servicer's context.

`LeanCall` is what grpcio's `ServicerContext` is to a servicer: `read()` (a
message, or `grpc.aio.EOF`), `write()`, `abort()`, `auth_context()` and
`invocation_metadata()`; plus the 5-byte message framing, `gzip`/`deflate`
decompression, the receive and send size limits, flow control held back
while too much is unread, and the status trailers that end the call.

`serve_inline` is the lean server's own extension, for a stream whose every
message gets exactly one reply computed without awaiting (Cortex's
FrontendLoop): the reply is made inside `data_received`, with no task
wake-up, future or loop turn per message.

Imports: `http2_frames`, `streams` (AbortError, malformed) and grpc's status
codes; the connection is typed, not imported, to keep `lean_server` ->
`lean_call` one way.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import grpc
from google.protobuf.message import DecodeError

from api.wire.grpc.http2_frames import NO_ERROR, STREAM_WINDOW, Http2Stream, encode_headers
from api.wire.grpc.streams import AbortError, malformed

if TYPE_CHECKING:
    from api.wire.grpc.lean_server import GrpcConnection

__all__ = ["ENCODINGS", "AbortError", "LeanCall", "Method", "status_fields"]

log = logging.getLogger(__name__)

ENCODINGS = ("gzip", "deflate")
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


def status_fields(code: grpc.StatusCode, details: str) -> list[tuple[str, str]]:
    """grpc-status and, with details, grpc-message percent-encoded as gRPC asks."""
    fields = [("grpc-status", str(code.value[0]))]
    if details:
        fields.append(("grpc-message", quote(details, safe=" !\"#$&'()*+,-./:;<=>?@[\\]^_`{|}~")))
    return fields


@dataclass(frozen=True, slots=True)
class Method:
    """One served method: stream-stream (`handler(call, call)`) or unary-unary."""

    path: str
    streaming: bool
    deserialize: Callable[[bytes], Any]
    serialize: Callable[[Any], bytes]
    handler: Callable[[Any, Any], Awaitable[Any]]


class LeanCall:
    """One call: the servicer's context and its message stream."""

    __slots__ = (
        "_buffer",
        "_conn",
        "_encoding",
        "_error",
        "_held",
        "_inline",
        "_messages",
        "_method",
        "_pending",
        "_sent_headers",
        "_stalled",
        "_unread",
        "_waiter",
        "deadline",
        "ended",
        "finished",
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
        # Bytes of whole messages not yet read; bytes received but not yet
        # granted back to the stream's window (held while too much is unread);
        # and every byte received and not yet read, whole messages or not,
        # which the connection counts too (`unread_grew`).
        self._unread = 0
        self._held = 0
        self._pending = 0
        self._waiter: asyncio.Future[None] | None = None
        self._sent_headers = False
        self._error: AbortError | None = None
        # serve_inline's answer, and whether its last reply waits on the
        # peer's window (then messages queue until it has gone).
        self._inline: Callable[[Any], Any] | None = None
        self._stalled = False
        self.ended = False
        # Status sent or queued: its trailers may still wait on the window.
        self.finished = False
        self.task: asyncio.Task[None] | None = None
        # The timer of the client's grpc-timeout, if it set one (`lean_server`).
        self.deadline: asyncio.TimerHandle | None = None

    # -- grpc.aio.ServicerContext, the parts the servicers use ---------------------

    async def read(self) -> Any:
        """The next message, or grpc.aio.EOF once the peer half-closed."""
        while not self._messages:
            if self._error is not None:
                raise self._error
            if self.ended:
                return self._eof()
            self._waiter = self._conn.loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._next()

    def _eof(self) -> Any:
        """grpc.aio.EOF for a peer that half-closed between messages; else it cut one short."""
        buf = self._buffer
        if buf:
            size = int.from_bytes(buf[1:5], "big") + 5 if len(buf) >= 5 else 5
            raise AbortError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"truncated message: the stream ended after {len(buf)} of its {size} bytes",
            )
        return _EOF

    def _next(self) -> Any:
        """Take the first queued message: re-open held windows, decompress, decode."""
        flag, payload = self._messages.popleft()
        self._unread -= len(payload) + 5
        self._pending -= len(payload) + 5
        self._conn.unread_shrank(len(payload) + 5)
        if self._held and self._unread <= STREAM_WINDOW:
            held, self._held = self._held, 0
            self._conn.stream_consumed(self.stream, held)
        if flag:
            if flag != 1:
                raise AbortError(
                    grpc.StatusCode.INTERNAL, f"message with compressed flag {flag} (not 0 or 1)"
                )
            payload = self._decompress(payload)
        return self._method.deserialize(payload)

    def release(self) -> None:
        """The call is over: what it still holds unread is dropped, and stops
        counting against the connection (`unread_shrank`); its held-back
        stream window goes back to the peer."""
        pending, self._pending = self._pending, 0
        if pending:
            self._messages.clear()
            self._buffer.clear()
            self._unread = 0
            self._conn.unread_shrank(pending)
        if self._held:
            held, self._held = self._held, 0
            self._conn.stream_consumed(self.stream, held)

    async def write(self, message: Any) -> None:
        if not self._put(message):
            await self._conn.wait_sent(self.stream)

    def _put(self, message: Any) -> bool:
        """Frame and send one message; False while it waits on the peer's window."""
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
        return conn.send_data(stream, b"\x00" + len(data).to_bytes(4, "big") + data)

    async def abort(self, code: grpc.StatusCode, details: str = "") -> None:
        raise AbortError(code, details)

    def auth_context(self) -> dict[str, list[bytes]]:
        return self._conn.auth_context()

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return tuple((k, v) for k, v in self.headers.items() if not k.startswith(":"))

    def peer(self) -> str:
        return self._conn.peer()

    # -- the lean server's extension (streams.answer_each) -----------------------------

    async def serve_inline(self, answer: Callable[[Any], Any]) -> None:
        """Reply to every further message with `answer(message)` as it arrives.

        The reply is made inside the connection's `data_received`: no task
        wake-up, future or loop turn per message, and the reply joins that
        turn's write. Messages already queued are answered first, so order is
        kept. Returns when the peer half-closes; raises what ended the call
        (`answer`'s AbortError, a malformed message as INVALID_ARGUMENT, any
        other error as UNKNOWN). While a reply waits on the peer's window,
        later messages queue, and hold that window back, until it has gone.
        """
        self._inline = answer
        try:
            while True:
                self._answer_queued()
                if self._error is not None:
                    raise self._error
                if self._stalled:
                    await self._conn.wait_sent(self.stream)
                    self._stalled = False
                    continue
                if self.ended and not self._messages:
                    self._eof()
                    return
                self._waiter = self._conn.loop.create_future()
                try:
                    await self._waiter
                finally:
                    self._waiter = None
        finally:
            self._inline = None

    def _answer_queued(self) -> None:
        answer = self._inline
        if answer is None:
            return
        while self._messages and not self._stalled and self._error is None:
            try:
                self._stalled = not self._put(answer(self._next()))
            except AbortError as exc:
                self._error = exc
            except DecodeError as exc:
                self._error = malformed(exc)
            except Exception as exc:
                # Raised inside data_received: it must end this call, not the connection.
                log.exception("gRPC method %s failed", self.headers.get(":path"))
                self._error = AbortError(grpc.StatusCode.UNKNOWN, f"{type(exc).__name__}: {exc}")
        if self._error is not None or self._stalled:
            self._wake()

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

        The stream's window is re-opened as bytes arrive (a message may be
        larger than a window) unless more than a window of whole messages
        waits unread: then it re-opens as `read` takes them, so a peer that
        sends faster than the servicer reads is held back. The connection's
        window is given back as bytes arrive too, but the connection holds
        it shut while its calls together hold too much unread
        (`Http2Control.give_back`): many streams that each keep less than a
        window unread must not add up without bound.
        """
        conn = self._conn
        size = len(payload)
        if size and self.finished:
            # The status is sent: nothing will read this call's messages again.
            conn.consumed(self.stream, size)
        elif size:
            # Counted first: a message too large is dropped with the rest (`release`).
            self._pending += size
            conn.unread_grew(size)
            self._receive(payload)
            conn.give_back(size)
            if self._unread <= STREAM_WINDOW:
                conn.stream_consumed(self.stream, self._held + size)
                self._held = 0
            else:
                self._held += size
        if self._inline is not None and not self._stalled:
            self._answer_queued()
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
        if self._encoding not in ENCODINGS:
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
        # zlib returns what it could inflate of a cut-short stream without an
        # error: that prefix could decode as a different message.
        if not inflater.eof or inflater.unused_data:
            problem = "ends early" if not inflater.eof else "has bytes after its end"
            raise AbortError(grpc.StatusCode.INTERNAL, f"bad {self._encoding} data: it {problem}")
        return data

    def finish(self, code: grpc.StatusCode, details: str = "") -> None:
        """Send the status (trailers-only if nothing was sent); reset a still-open peer side."""
        conn, stream = self._conn, self.stream
        if stream.local_closed or self.finished:
            return
        self.finished = True
        if code is grpc.StatusCode.OK and self._sent_headers:
            block = _OK_TRAILERS
        else:
            fields = (
                []
                if self._sent_headers
                else [(":status", "200"), ("content-type", "application/grpc")]
            )
            block = encode_headers(fields + status_fields(code, details))
        self.release()
        conn.send_headers(stream, block, end=True)
        if not stream.remote_closed and not stream.queued:
            # The client may still be sending: tell it to stop (as grpc-go
            # does); not while our last frames wait for its window, which the
            # reset would throw away.
            conn.reset(stream, NO_ERROR)
