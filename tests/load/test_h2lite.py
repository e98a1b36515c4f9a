"""The benchmark's HTTP/2 wire, frame by frame on a recording transport."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import hpack
import pytest

from tests.load.h2lite import (
    ACK,
    CONTINUATION,
    DATA,
    END_HEADERS,
    END_STREAM,
    HEADERS,
    PING,
    RST_STREAM,
    WINDOW_UPDATE,
    ClientConnection,
    GrpcCallError,
    StreamReset,
    encode_headers,
    frame,
    grpc_message,
)


class RecordingTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()

    def write(self, data: Any) -> None:
        self.written += data

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def frames(self) -> list[tuple[int, int, int, bytes]]:
        out, data, offset = [], bytes(self.written), 0
        while offset < len(data):
            word, flags, sid = struct.unpack_from(">IBI", data, offset)
            length = word >> 8
            out.append((word & 0xFF, flags, sid, data[offset + 9 : offset + 9 + length]))
            offset += 9 + length
        self.written.clear()
        return out


def connection() -> tuple[ClientConnection, RecordingTransport]:
    conn = ClientConnection("scheduler:9095")
    transport = RecordingTransport()
    conn.connection_made(transport)
    return conn, transport


def response_headers(stream_id: int, fields: list[tuple[str, str]], *, end: bool) -> bytes:
    block = hpack.Encoder().encode(fields)
    return frame(HEADERS, END_HEADERS | (END_STREAM if end else 0), stream_id, block)


async def test_header_blocks_we_encode_decode_with_a_standard_hpack_decoder() -> None:
    fields = [(":path", "/a/b"), ("x-scope-orgid", "t" * 300), ("te", "trailers")]
    assert [(str(k), str(v)) for k, v in hpack.Decoder().decode(encode_headers(fields))] == fields


async def test_a_ping_is_answered_with_an_ack_carrying_the_same_bytes() -> None:
    conn, transport = connection()
    conn.data_received(frame(PING, 0, 0, b"12345678"))
    assert transport.frames() == [(PING, ACK, 0, b"12345678")]


async def test_messages_split_across_frames_and_reads_are_reassembled_in_order() -> None:
    conn, transport = connection()
    stream = conn.open_stream("/svc/Method")
    wire = frame(DATA, 0, stream.id, grpc_message(b"first") + grpc_message(b"sec")[:4])
    wire += frame(DATA, 0, stream.id, grpc_message(b"sec")[4:] + grpc_message(b""))
    for i in range(0, len(wire), 7):
        conn.data_received(wire[i : i + 7])
    assert [await stream.recv() for _ in range(3)] == [b"first", b"sec", b""]


async def test_a_header_block_continued_in_continuation_frames_is_decoded_whole() -> None:
    conn, _ = connection()
    stream = conn.open_stream("/svc/Method")
    block = hpack.Encoder().encode([("grpc-status", "5"), ("grpc-message", "not found")])
    conn.data_received(
        frame(HEADERS, END_STREAM, stream.id, block[:3])
        + frame(CONTINUATION, END_HEADERS, stream.id, block[3:])
    )
    with pytest.raises(GrpcCallError) as error:
        await stream.recv()
    assert error.value.status == 5


async def test_the_stream_ends_cleanly_on_trailers_with_status_zero() -> None:
    conn, _ = connection()
    stream = conn.open_stream("/svc/Method")
    conn.data_received(response_headers(stream.id, [(":status", "200")], end=False))
    conn.data_received(frame(DATA, 0, stream.id, grpc_message(b"reply")))
    conn.data_received(response_headers(stream.id, [("grpc-status", "0")], end=True))
    assert await stream.recv() == b"reply"
    assert await stream.recv() is None
    assert stream.id not in conn.streams


async def test_received_data_is_given_back_to_the_peer_before_its_window_runs_low() -> None:
    conn, transport = connection()
    stream = conn.open_stream("/svc/Method")
    transport.frames()
    chunk = grpc_message(b"x" * 16_000)
    for _ in range((1 << 24) // len(chunk) + 1):
        conn.data_received(frame(DATA, 0, stream.id, chunk))
    updates = {sid for kind, _, sid, _ in transport.frames() if kind == WINDOW_UPDATE}
    assert updates == {0, stream.id}


async def test_a_reset_stream_fails_its_pending_read_and_leaves_the_others_open() -> None:
    conn, _ = connection()
    reset, other = conn.open_stream("/svc/A"), conn.open_stream("/svc/B")
    read = asyncio.ensure_future(reset.recv())
    await asyncio.sleep(0)
    conn.data_received(frame(RST_STREAM, 0, reset.id, (8).to_bytes(4, "big")))
    with pytest.raises(StreamReset):
        await read
    conn.data_received(frame(DATA, 0, other.id, grpc_message(b"still here")))
    assert await other.recv() == b"still here"
