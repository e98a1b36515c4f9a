"""A raw HTTP/2 peer for the hostile-client tests: frames exactly as written.

Neither grpcio nor our own layer would send what these tests need (a bad
pseudo-header, a message cut short, a window that never opens), so this
peer writes frames byte by byte and reads back every frame the other side
sends. Like grpc-go, it opens 64 KiB windows and, when `grant` is on, gives
back what it received at once, so a sender that waits for a whole message to
fit its window would wait forever.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

import hpack

from api.wire.grpc.http2_frames import (
    DATA,
    END_HEADERS,
    END_STREAM,
    GOAWAY,
    HEADERS,
    PREFACE,
    RST_STREAM,
    SETTINGS,
    WINDOW_UPDATE,
    encode_headers,
    frame,
)

__all__ = ["RawPeer", "StreamReply", "grpc_message", "request_headers", "until"]

FRAME = struct.Struct(">IBI")
ACK = 0x1


async def until(condition: Callable[[], object], timeout: float = 5.0) -> None:
    """Until the server side shows `condition`: its socket work takes real time."""

    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.005)

    await asyncio.wait_for(poll(), timeout)


def request_headers(path: str, *extra: tuple[str, str]) -> list[tuple[str, str]]:
    """A gRPC request's header fields, as grpc-go sends them."""
    return [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", path),
        (":authority", "test"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
        *extra,
    ]


def grpc_message(payload: bytes, *, flag: int = 0, length: int | None = None) -> bytes:
    """A length-prefixed gRPC message; `length` may lie about its size."""
    size = len(payload) if length is None else length
    return bytes((flag,)) + size.to_bytes(4, "big") + payload


@dataclass
class StreamReply:
    """What came back on one stream: header blocks in order, DATA, a reset."""

    blocks: list[dict[str, str]] = field(default_factory=list)
    data: bytearray = field(default_factory=bytearray)
    reset: int | None = None
    ended: bool = False

    @property
    def status(self) -> dict[str, str]:
        """The last header block: the trailers, or a trailers-only answer."""
        return self.blocks[-1] if self.blocks else {}

    def messages(self) -> list[bytes]:
        out, data = [], bytes(self.data)
        while len(data) >= 5:
            size = int.from_bytes(data[1:5], "big")
            if len(data) < 5 + size:
                break
            out.append(data[5 : 5 + size])
            data = data[5 + size :]
        return out


class RawPeer:
    """One connection; `start` is the client's preface, `accept` a server's."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.replies: dict[int, StreamReply] = {}
        self.goaway: tuple[int, bytes] | None = None
        self.grant = True
        self.ack_settings = True
        self._decoder = hpack.Decoder()

    @classmethod
    async def connect(cls, port: int, settings: bytes = b"") -> RawPeer:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        peer = cls(reader, writer)
        peer.send(PREFACE + frame(SETTINGS, 0, 0, settings))
        return peer

    async def accept(self) -> None:
        """As a server: read the client's preface, send our (empty) SETTINGS."""
        assert await self.reader.readexactly(len(PREFACE)) == PREFACE
        self.send(frame(SETTINGS, 0, 0))

    def send(self, data: bytes) -> None:
        self.writer.write(data)

    def open(self, stream: int, fields: list[tuple[str, str]], *, end: bool = False) -> None:
        flags = END_HEADERS | (END_STREAM if end else 0)
        self.send(frame(HEADERS, flags, stream, encode_headers(fields)))

    def data(self, stream: int, payload: bytes, *, end: bool = False) -> None:
        for i in range(0, max(len(payload), 1), 16_384):
            last = end and i + 16_384 >= len(payload)
            self.send(frame(DATA, END_STREAM if last else 0, stream, payload[i : i + 16_384]))

    def reply(self, stream: int) -> StreamReply:
        return self.replies.setdefault(stream, StreamReply())

    async def read_frame(self) -> tuple[int, int, int, bytes]:
        """The next frame (answering SETTINGS and granting DATA as grpc-go would)."""
        word, flags, stream = FRAME.unpack(await self.reader.readexactly(9))
        payload = await self.reader.readexactly(word >> 8)
        kind = word & 0xFF
        if kind == SETTINGS and not flags & ACK and self.ack_settings:
            self.send(frame(SETTINGS, ACK, 0))
        elif kind == DATA:
            self.reply(stream).data += payload
            if self.grant and payload:
                grant = len(payload).to_bytes(4, "big")
                self.send(
                    frame(WINDOW_UPDATE, 0, stream, grant) + frame(WINDOW_UPDATE, 0, 0, grant)
                )
        elif kind == HEADERS:
            self.reply(stream).blocks.append(
                {str(k): str(v) for k, v in self._decoder.decode(payload)}
            )
        elif kind == RST_STREAM:
            self.reply(stream).reset = int.from_bytes(payload, "big")
        elif kind == GOAWAY:
            self.goaway = (int.from_bytes(payload[4:8], "big"), payload[8:])
        if kind in (DATA, HEADERS) and flags & END_STREAM:
            self.reply(stream).ended = True
        return kind, flags, stream, payload

    async def until_ended(self, stream: int, timeout: float = 10.0) -> StreamReply:
        """Frames until `stream` ends (END_STREAM or RST_STREAM)."""
        reply = self.reply(stream)

        async def read() -> None:
            while not reply.ended and reply.reset is None:
                await self.read_frame()

        await asyncio.wait_for(read(), timeout)
        return reply

    async def until_messages(self, stream: int, count: int, timeout: float = 10.0) -> StreamReply:
        """Frames until `count` whole messages came on `stream`."""
        reply = self.reply(stream)

        async def read() -> None:
            while len(reply.messages()) < count:
                await self.read_frame()

        await asyncio.wait_for(read(), timeout)
        return reply

    async def until_closed(self, timeout: float = 10.0) -> None:
        """Frames until the other side closes the connection."""

        async def read() -> None:
            try:
                while True:
                    await self.read_frame()
            except (asyncio.IncompleteReadError, ConnectionResetError):
                return  # closed, or reset under frames it had not yet read

        await asyncio.wait_for(read(), timeout)

    def close(self) -> None:
        self.writer.close()
