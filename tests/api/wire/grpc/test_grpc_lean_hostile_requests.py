"""What the lean door answers a client that breaks HTTP/2 or gRPC.

Each broken request gets a status naming what was wrong (or, for the
connection's own frames, GOAWAY with RFC 9113's code and a reason), and the
connection's other streams and other clients go on.
"""

from __future__ import annotations

import asyncio
import gzip
import logging
import struct
import zlib

import grpc
import pytest

from api.wire.grpc.http2_frames import (
    FLOW_CONTROL_ERROR,
    PROTOCOL_ERROR,
    RST_STREAM,
    SETTINGS,
    WINDOW_UPDATE,
    frame,
)
from api.wire.grpc.server import GrpcFrontDoor
from scheduler_core.pb import schedulerpb_pb2 as pb
from tests.api.wire.grpc.raw_http2 import RawPeer, grpc_message, request_headers

FRONTEND_LOOP = "/schedulerpb.SchedulerForFrontend/FrontendLoop"
NOTIFY_SHUTDOWN = "/schedulerpb.SchedulerForQuerier/NotifyQuerierShutdown"
INIT = pb.FrontendToScheduler(type=pb.INIT, frontendAddress="fe:1").SerializeToString()


def code(status: grpc.StatusCode) -> str:
    return str(status.value[0])


async def answer(
    door: GrpcFrontDoor, fields: list[tuple[str, str]], body: bytes = b""
) -> dict[str, str]:
    """Send one request (stream 1, then half-closed); its last header block."""
    peer = await RawPeer.connect(door.port)
    try:
        peer.open(1, fields)
        peer.data(1, body, end=True)
        reply = await peer.until_ended(1)
        assert peer.goaway is None
        return reply.status
    finally:
        peer.close()


async def assert_door_still_serves(door: GrpcFrontDoor) -> None:
    status = await answer(door, request_headers(FRONTEND_LOOP), grpc_message(INIT))
    assert status["grpc-status"] == "0"


BASE = request_headers(FRONTEND_LOOP)


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ([f for f in BASE if f[0] != ":path"], "no :path pseudo-header"),
        ([f for f in BASE if f[0] != ":scheme"], "no :scheme pseudo-header"),
        ([(":path", "/x.Y/Z"), *BASE], "pseudo-header :path given twice"),
        ([*BASE[1:], BASE[0]], "pseudo-header :method after a regular header"),
        ([(":protocol", "x"), *BASE], "unknown pseudo-header :protocol"),
        ([*BASE, ("X-Org", "a")], "header name 'X-Org' is not lowercase"),
    ],
)
async def test_a_malformed_header_block_is_refused_naming_the_problem(
    door: GrpcFrontDoor, fields: list[tuple[str, str]], problem: str
) -> None:
    status = await answer(door, fields, grpc_message(INIT))

    assert status[":status"] == "400"
    assert status["grpc-status"] == code(grpc.StatusCode.INTERNAL)
    assert status["grpc-message"] == f"malformed request: {problem}"
    await assert_door_still_serves(door)


@pytest.mark.parametrize(
    ("fields", "http", "status_code", "message"),
    [
        (
            [(":method", "GET"), *BASE[1:]],
            "405",
            grpc.StatusCode.INTERNAL,
            ":method GET (gRPC calls are POST)",
        ),
        (
            [*BASE[:4], ("content-type", "text/plain")],
            "415",
            grpc.StatusCode.INVALID_ARGUMENT,
            "content-type 'text/plain' is not application/grpc",
        ),
        (
            [*BASE[:4], ("content-type", "application/grpcfoo")],
            "415",
            grpc.StatusCode.INVALID_ARGUMENT,
            "content-type 'application/grpcfoo' is not application/grpc",
        ),
    ],
)
async def test_a_request_that_is_not_grpc_gets_an_http_and_a_grpc_status(
    door: GrpcFrontDoor,
    fields: list[tuple[str, str]],
    http: str,
    status_code: grpc.StatusCode,
    message: str,
) -> None:
    status = await answer(door, fields, grpc_message(INIT))

    assert (status[":status"], status["grpc-status"]) == (http, code(status_code))
    assert status["grpc-message"] == message


async def test_a_grpc_content_type_with_a_subtype_is_served(door: GrpcFrontDoor) -> None:
    fields = [*BASE[:4], ("content-type", "application/grpc+proto")]

    status = await answer(door, fields, grpc_message(INIT))

    assert status["grpc-status"] == "0"


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        (FRONTEND_LOOP, grpc_message(INIT, length=100), f"after {5 + len(INIT)} of its 105 bytes"),
        (FRONTEND_LOOP, grpc_message(INIT) + b"\x00\x00\x00", "after 3 of its 5 bytes"),
        (NOTIFY_SHUTDOWN, grpc_message(b"\x0a\x01q", length=50), "after 8 of its 55 bytes"),
    ],
)
async def test_a_message_cut_short_by_the_end_of_its_stream_is_invalid_argument(
    door: GrpcFrontDoor, path: str, body: bytes, message: str
) -> None:
    status = await answer(door, request_headers(path), body)

    assert status["grpc-status"] == code(grpc.StatusCode.INVALID_ARGUMENT)
    assert status["grpc-message"] == f"truncated message: the stream ended {message}"


# mtime 0: the same bytes in every process, so parallel workers (pytest-xdist)
# collect the same test IDs.
GZIPPED_INIT = gzip.compress(INIT, mtime=0)


@pytest.mark.parametrize(
    ("encoding", "body", "message"),
    [
        ("gzip", grpc_message(GZIPPED_INIT[:-6], flag=1), "bad gzip data: it ends early"),
        (
            "deflate",
            grpc_message(zlib.compress(INIT)[:-4], flag=1),
            "bad deflate data: it ends early",
        ),
        (
            "gzip",
            grpc_message(GZIPPED_INIT + b"junk", flag=1),
            "bad gzip data: it has bytes after its end",
        ),
        ("gzip", grpc_message(INIT, flag=2), "message with compressed flag 2 (not 0 or 1)"),
    ],
)
async def test_compressed_data_cut_short_run_on_or_flagged_oddly_is_refused(
    door: GrpcFrontDoor, encoding: str, body: bytes, message: str
) -> None:
    status = await answer(door, request_headers(FRONTEND_LOOP, ("grpc-encoding", encoding)), body)

    assert status["grpc-status"] == code(grpc.StatusCode.INTERNAL)
    assert status["grpc-message"] == message


async def test_a_whole_gzip_message_is_still_read(door: GrpcFrontDoor) -> None:
    fields = request_headers(FRONTEND_LOOP, ("grpc-encoding", "gzip"))

    status = await answer(door, fields, grpc_message(GZIPPED_INIT, flag=1))

    assert status["grpc-status"] == "0"


async def test_snappy_calls_are_refused_unimplemented_and_the_client_named_once_in_the_log(
    door: GrpcFrontDoor, caplog: pytest.LogCaptureFixture
) -> None:
    # Cortex v1.15.3 offers snappy, snappy-block and zstd on its scheduler
    # clients too; with them it retried every call while only its log said why.
    caplog.set_level(logging.INFO, "api.wire.grpc.lean_server")
    fields = request_headers(FRONTEND_LOOP, ("grpc-encoding", "snappy"))
    peer = await RawPeer.connect(door.port)
    try:
        for stream in (1, 3):  # a retry on the same connection
            peer.open(stream, fields)
            peer.data(stream, grpc_message(INIT, flag=1), end=True)
            status = (await peer.until_ended(stream)).status

            assert status["grpc-status"] == code(grpc.StatusCode.UNIMPLEMENTED)
            assert (
                status["grpc-message"] == "grpc-encoding snappy is not supported (use gzip or none)"
            )
    finally:
        peer.close()

    [line] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert line.endswith(
        " sends snappy-compressed messages, which the door cannot read: its calls are refused "
        "with UNIMPLEMENTED (its -*.grpc-compression must be gzip or empty)"
    )


SETTING = struct.Struct(">HI")


@pytest.mark.parametrize(
    ("frames", "error", "reason"),
    [
        (frame(SETTINGS, 0, 0, SETTING.pack(0x2, 2)), PROTOCOL_ERROR, b"ENABLE_PUSH of 2"),
        (frame(RST_STREAM, 0, 7, bytes(4)), PROTOCOL_ERROR, b"RST_STREAM on idle stream 7"),
        (
            frame(WINDOW_UPDATE, 0, 9, (1).to_bytes(4, "big")),
            PROTOCOL_ERROR,
            b"WINDOW_UPDATE on idle stream 9",
        ),
        (
            # Stream 1's window grows to 2**31 - 1; a larger initial window
            # would carry it past what RFC 9113 allows.
            frame(WINDOW_UPDATE, 0, 1, (2**31 - 1 - 65_535).to_bytes(4, "big"))
            + frame(SETTINGS, 0, 0, SETTING.pack(0x4, 65_536)),
            FLOW_CONTROL_ERROR,
            b"initial window overflow",
        ),
    ],
    ids=["enable-push", "rst-idle", "window-idle", "initial-window-overflow"],
)
async def test_control_frames_rfc_9113_forbids_end_the_connection_with_goaway(
    door: GrpcFrontDoor, frames: bytes, error: int, reason: bytes
) -> None:
    peer = await RawPeer.connect(door.port)
    try:
        peer.open(1, request_headers(FRONTEND_LOOP))  # an open stream for the window case
        peer.send(frames)
        await peer.until_closed()

        assert peer.goaway == (error, reason)
    finally:
        peer.close()
    await assert_door_still_serves(door)


async def test_a_new_request_on_a_closed_streams_id_ends_the_connection(
    door: GrpcFrontDoor,
) -> None:
    peer = await RawPeer.connect(door.port)
    try:
        peer.open(1, BASE)
        peer.data(1, grpc_message(INIT), end=True)
        await peer.until_ended(1)

        peer.open(1, BASE)  # not trailers (no END_STREAM): a request that would go unanswered
        await peer.until_closed()

        assert peer.goaway == (PROTOCOL_ERROR, b"HEADERS reusing closed stream 1")
    finally:
        peer.close()


async def test_a_client_that_never_sends_the_preface_is_closed_with_goaway(
    door: GrpcFrontDoor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("api.wire.grpc.http2.PREFACE_TIMEOUT", 0.05)
    reader, writer = await asyncio.open_connection("127.0.0.1", door.port)
    peer = RawPeer(reader, writer)
    peer.ack_settings = False  # silent: not a byte, not even the ack of the door's SETTINGS
    try:
        await peer.until_closed()

        assert peer.goaway == (PROTOCOL_ERROR, b"no HTTP/2 connection preface within 0.05 s")
    finally:
        peer.close()
    await assert_door_still_serves(door)
