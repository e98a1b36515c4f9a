"""The benchmark's HTTP/2 wire sends DATA in pieces, as its peer's windows open.

grpc-go opens 64 KiB windows and widens them only as DATA arrives, and the
lean door opens 1 MiB stream windows: a message larger than what a window
has left must go in part, or it never goes. These tests read the frames on
a recording transport; the same against real peers, on asyncio's loop and
uvloop, is in tests/api/wire/grpc/test_grpc_lean_flow_control.py.
"""

from __future__ import annotations

import asyncio
import struct

from api.wire.grpc.http2_frames import PREFACE
from tests.load.h2lite import (
    DATA,
    END_HEADERS,
    END_STREAM,
    HEADERS,
    S_INITIAL_WINDOW_SIZE,
    SETTINGS,
    WINDOW_UPDATE,
    ServerConnection,
    encode_headers,
    frame,
    grpc_message,
)
from tests.load.test_h2lite import RecordingTransport, connection


def window_of(size: int) -> bytes:
    return frame(SETTINGS, 0, 0, struct.pack(">HI", S_INITIAL_WINDOW_SIZE, size))


def grant(stream_id: int, size: int) -> bytes:
    return frame(WINDOW_UPDATE, 0, stream_id, size.to_bytes(4, "big"))


async def test_a_message_larger_than_the_peers_window_goes_in_pieces_as_it_opens() -> None:
    conn, transport = connection()
    conn.data_received(window_of(8))
    stream = conn.open_stream("/svc/Method")
    transport.frames()

    stream.send(b"0123456789")  # 15 bytes framed: 8 fit the stream's window
    stream.send(b"x")  # must not overtake the first message's rest
    first = transport.frames()
    conn.data_received(grant(stream.id, 20))
    rest = transport.frames()

    assert [(kind, payload) for kind, _, _, payload in first] == [
        (DATA, grpc_message(b"0123456789")[:8])
    ]
    assert [(kind, payload) for kind, _, _, payload in rest] == [
        (DATA, grpc_message(b"0123456789")[8:]),
        (DATA, grpc_message(b"x")),
    ]


async def test_a_stream_whose_window_is_spent_holds_back_only_its_own_data() -> None:
    conn, transport = connection()
    conn.data_received(window_of(8))
    held, other = conn.open_stream("/svc/A"), conn.open_stream("/svc/B")
    transport.frames()

    held.send(b"0123456789")
    other.send(b"y")

    sent = [(sid, payload) for kind, _, sid, payload in transport.frames() if kind == DATA]
    assert sent == [(held.id, grpc_message(b"0123456789")[:8]), (other.id, grpc_message(b"y"))]


async def test_the_connection_window_is_shared_and_spent_in_order() -> None:
    conn, transport = connection()  # the peer's connection window: 65,535 bytes
    first, second = conn.open_stream("/svc/A"), conn.open_stream("/svc/B")
    transport.frames()

    first.send(b"a" * 40_000)
    second.send(b"b" * 40_000)
    before = sum(len(p) for kind, _, _, p in transport.frames() if kind == DATA)
    conn.data_received(grant(0, 1 << 20))
    after = [(sid, len(p)) for kind, _, sid, p in transport.frames() if kind == DATA]

    assert before == 65_535
    assert sum(size for _, size in after) == 2 * 40_005 - 65_535
    assert sum(size for sid, size in after if sid == first.id) == 0  # it had all its bytes out


async def test_a_servers_trailers_follow_its_response_sent_in_pieces() -> None:
    response = b"r" * 100_000

    async def handler(path: str, headers: dict[str, str], request: bytes) -> bytes:
        return response

    conn = ServerConnection(handler)
    transport = RecordingTransport()
    conn.connection_made(transport)
    request = encode_headers(
        [(":method", "POST"), (":path", "/svc/M"), ("content-type", "application/grpc")]
    )
    conn.data_received(
        PREFACE
        + frame(SETTINGS, 0, 0, b"")
        + frame(HEADERS, END_HEADERS, 1, request)
        + frame(DATA, END_STREAM, 1, grpc_message(b"q"))
    )
    await asyncio.gather(*conn._tasks)  # the handler's answer
    held = transport.frames()
    conn.data_received(grant(1, 1 << 20) + grant(0, 1 << 20))
    rest = transport.frames()

    assert sum(len(p) for kind, _, sid, p in held if kind == DATA and sid == 1) == 65_535
    assert not any(kind == HEADERS and flags & END_STREAM for kind, flags, _, _ in held)
    body = b"".join(p for kind, _, _, p in held + rest if kind == DATA)
    assert body == grpc_message(response)
    kind, flags, _, _ = rest[-1]
    assert (kind, flags & END_STREAM) == (HEADERS, END_STREAM)
    assert 1 not in conn.streams
