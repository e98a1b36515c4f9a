"""Seeded random HTTP/2 byte streams against the lean door: no error escapes it.

Each seed opens a connection and sends the preface, then a mix of frames:
gRPC HEADERS for the door's methods and others (HPACK-encoded, some with
compression or timeouts), length-prefixed messages (valid protobuf, garbage,
lying lengths, compressed flags), WINDOW_UPDATE, SETTINGS, PING, RST_STREAM,
GOAWAY, CONTINUATION and unknown types with random flags, stream ids and
payloads, sometimes cut mid-frame. Whatever the door does with them (serve,
refuse a stream, end the connection with GOAWAY), nothing may reach the
loop's exception handler (an exception out of `data_received`, a task that
died), and afterwards the door still schedules a query. `FUZZ_SEEDS=N` runs
more.
"""

from __future__ import annotations

import asyncio
import os
import random
import struct
from typing import Any

import hpack

from api.wire.grpc.clients import CortexFrontend, get_request
from api.wire.grpc.http2_frames import PREFACE
from api.wire.grpc.server import GrpcFrontDoor
from scheduler_core.pb import schedulerpb_pb2 as pb

SEEDS = int(os.environ.get("FUZZ_SEEDS", "300"))
PATHS = (
    "/schedulerpb.SchedulerForFrontend/FrontendLoop",
    "/schedulerpb.SchedulerForQuerier/QuerierLoop",
    "/schedulerpb.SchedulerForQuerier/NotifyQuerierShutdown",
    "/no.Such/Method",
)
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS = 0, 1, 2, 3, 4
PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 6, 7, 8, 9


def frame(kind: int, flags: int, stream_id: int, payload: bytes) -> bytes:
    return (
        struct.pack(">I", len(payload))[1:]
        + bytes((kind, flags))
        + struct.pack(">I", stream_id)
        + payload
    )


def header_block(rng: random.Random, encoder: hpack.Encoder) -> bytes:
    fields = [
        (":method", rng.choice(("POST", "POST", "GET"))),
        (":scheme", "http"),
        (":path", rng.choice(PATHS)),
        (":authority", "scheduler"),
        ("content-type", rng.choice(("application/grpc", "application/grpc", "text/plain"))),
        ("te", "trailers"),
    ]
    if rng.random() < 0.3:
        fields.append(("grpc-encoding", rng.choice(("gzip", "identity", "br"))))
    if rng.random() < 0.2:
        fields.append(("grpc-timeout", rng.choice(("1S", "xx", "99999999H"))))
    if rng.random() < 0.1:
        rng.shuffle(fields)  # pseudo-headers after regular ones
    return bytes(encoder.encode(fields))


def message(rng: random.Random) -> bytes:
    body = rng.choice(
        (
            pb.FrontendToScheduler(type=pb.INIT, frontendAddress="f:1").SerializeToString(),
            pb.QuerierToScheduler(querierID="q").SerializeToString(),
            rng.randbytes(rng.randrange(20)),
        )
    )
    length = len(body) if rng.random() < 0.9 else rng.randrange(2**32)
    return bytes((rng.choice((0, 0, 0, 1, 2)),)) + struct.pack(">I", length) + body


def random_stream(rng: random.Random) -> bytes:
    encoder = hpack.Encoder()
    out = bytearray(PREFACE + frame(SETTINGS, 0, 0, b""))
    for _ in range(rng.randrange(1, 25)):
        sid = rng.choice((1, 3, 5, 7, 0, 2))
        pick = rng.random()
        if pick < 0.25:
            block = header_block(rng, encoder) if rng.random() < 0.9 else rng.randbytes(30)
            out += frame(HEADERS, rng.choice((4, 5, 12, 36, 0, 1)), sid, block)
        elif pick < 0.5:
            body = message(rng) if rng.random() < 0.8 else rng.randbytes(rng.randrange(30))
            out += frame(DATA, rng.choice((0, 1, 8)), sid, body)
        elif pick < 0.6:
            out += frame(WINDOW_UPDATE, 0, sid, rng.randbytes(rng.choice((4, 4, 3, 5))))
        elif pick < 0.7:
            size = rng.choice((0, 6, 12, 5, 18))
            out += frame(SETTINGS, rng.choice((0, 1)), rng.choice((0, 0, 1)), rng.randbytes(size))
        elif pick < 0.75:
            out += frame(PING, rng.choice((0, 1)), rng.choice((0, 0, 1)), rng.randbytes(8))
        elif pick < 0.8:
            out += frame(RST_STREAM, 0, sid, rng.randbytes(rng.choice((4, 3))))
        elif pick < 0.85:
            out += frame(GOAWAY, 0, rng.choice((0, 1)), rng.randbytes(rng.choice((8, 12, 4))))
        elif pick < 0.9:
            out += frame(CONTINUATION, rng.choice((0, 4)), sid, rng.randbytes(rng.randrange(10)))
        else:
            kind, flags = rng.randrange(12), rng.randrange(256)
            out += frame(kind, flags, sid, rng.randbytes(rng.randrange(20)))
    if rng.random() < 0.2:
        del out[rng.randrange(len(PREFACE), len(out) + 1) :]  # cut mid-frame
    return bytes(out)


async def test_random_http2_byte_streams_never_raise_out_of_the_lean_door(
    door: GrpcFrontDoor,
) -> None:
    loop = asyncio.get_running_loop()
    escaped: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _, context: escaped.append(context))
    try:
        for seed in range(SEEDS):
            reader, writer = await asyncio.open_connection("127.0.0.1", door.port)
            writer.write(random_stream(random.Random(seed)))
            try:
                await asyncio.wait_for(writer.drain(), 2)
                await asyncio.wait_for(reader.read(65536), 0.05)  # the door's SETTINGS
                await asyncio.sleep(0)
                await asyncio.wait_for(reader.read(65536), 0.01)
            except (TimeoutError, ConnectionError):
                pass
            writer.close()
            assert not escaped, f"seed {seed}: {escaped[0]}"
        await asyncio.sleep(0.05)  # streams the last seeds opened end
        assert not escaped, escaped[0]
    finally:
        loop.set_exception_handler(None)

    frontend = await CortexFrontend(f"127.0.0.1:{door.port}").start()
    try:
        loop_call = await frontend.open_loop()
        up = get_request("/api/v1/query", [("query", "up")])
        assert await loop_call.enqueue(1, "t", up) == pb.OK
    finally:
        await frontend.close()
