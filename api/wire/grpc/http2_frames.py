"""HTTP/2 wire constants, frames and header blocks for the lean gRPC door.

Split from `http2.py` (the connection): the numbers of RFC 9113, the sizes
and limits the door offers its peers, and the two encoders it needs.
"""

from __future__ import annotations

import struct
from typing import Any

__all__ = [
    "CANCEL",
    "ENHANCE_YOUR_CALM",
    "FLOW_CONTROL_ERROR",
    "NO_ERROR",
    "PREFACE",
    "PROTOCOL_ERROR",
    "REFUSED_STREAM",
    "STREAM_WINDOW",
    "Http2Stream",
    "ProtocolError",
    "encode_headers",
    "frame",
    "request_header_problem",
]

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY = range(8)
WINDOW_UPDATE, CONTINUATION = 8, 9
END_STREAM = ACK = 0x1
END_HEADERS = 0x4
PADDED = 0x8
PRIORITY_FLAG = 0x20
NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR = 0x0, 0x1, 0x2, 0x3
STREAM_CLOSED, FRAME_SIZE_ERROR, REFUSED_STREAM, CANCEL = 0x5, 0x6, 0x7, 0x8
COMPRESSION_ERROR, ENHANCE_YOUR_CALM = 0x9, 0xB
S_HEADER_TABLE_SIZE, S_MAX_CONCURRENT_STREAMS, S_INITIAL_WINDOW_SIZE = 0x1, 0x3, 0x4
S_ENABLE_PUSH, S_MAX_FRAME_SIZE, S_MAX_HEADER_LIST_SIZE = 0x2, 0x5, 0x6

FRAME_HEADER = struct.Struct(">IBI")  # length << 8 | type, flags, stream id
SETTING = struct.Struct(">HI")
MAX_WINDOW = 2**31 - 1
DEFAULT_WINDOW = 65_535
DEFAULT_FRAME = 16_384
# Per-stream receive window we offer, and the connection's: a stream may
# have this much unread before the peer must wait for us.
STREAM_WINDOW = 1 << 20
CONNECTION_WINDOW = 1 << 24
# Unread bytes a connection may hold (whole messages its handlers have not
# read, and the parts of messages still arriving) before its window stays
# shut until they read: at most this plus one CONNECTION_WINDOW held per
# connection, however many streams. A message must arrive whole to be read,
# so this is one and a half windows: two messages of the largest size
# (server.MAX_MESSAGE_BYTES, one window) arriving at once still complete,
# their halves granted back at 8, 16 and 24 MiB.
UNREAD_LIMIT = CONNECTION_WINDOW + CONNECTION_WINDOW // 2
# Streams a client may have open on one connection. A SETTINGS frame that
# changes the initial window moves every open stream's window (RFC 9113
# 6.9.2), so its cost grows with this: at 4,096 one 15-byte frame cost the
# loop 0.4 ms, at 512 60 us. Cortex's own scheduler (grpc-go) offers 100
# (-server.grpc-max-concurrent-streams); a Cortex querier opens one
# QuerierLoop per worker (-querier.max-concurrent, 20 by default) and a
# frontend -frontend.scheduler-worker-concurrency (5) FrontendLoops, one
# connection each. 512 keeps the most our own loadgen opens on one channel
# (256 --workers QuerierLoops and 2 FrontendLoops) inside, where grpcio would
# otherwise leave the workers past the limit waiting for a stream.
MAX_CONCURRENT_STREAMS = 512
MAX_HEADER_LIST = 1 << 16  # a header block (with CONTINUATIONs) beyond this ends the connection
# A server connection whose client has not sent its preface by then is
# closed, as grpc-go's ConnectionTimeout does: else idle sockets cost
# descriptors for ever.
PREFACE_TIMEOUT = 120.0
# Ping policing, as grpcio's min_ping_interval_without_data 5 s / 2 strikes.
PING_INTERVAL = 5.0
PING_STRIKES = 2
OUR_SETTINGS = b"".join(
    SETTING.pack(key, value)
    for key, value in (
        (S_MAX_CONCURRENT_STREAMS, MAX_CONCURRENT_STREAMS),
        (S_INITIAL_WINDOW_SIZE, STREAM_WINDOW),
        (S_MAX_HEADER_LIST_SIZE, MAX_HEADER_LIST),
        (S_ENABLE_PUSH, 0),
    )
)


class ProtocolError(Exception):
    """The peer broke RFC 9113: the connection ends with GOAWAY `code`."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def frame(kind: int, flags: int, stream_id: int, payload: bytes = b"") -> bytes:
    return FRAME_HEADER.pack(len(payload) << 8 | kind, flags, stream_id) + payload


def encode_headers(headers: list[tuple[str, str]]) -> bytes:
    """A header block of literals never indexed, new names, no Huffman."""
    out = bytearray()
    for name, value in headers:
        out.append(0x10)
        for text in (name.encode(), value.encode()):
            out += _hpack_int(len(text), 7)
            out += text
    return bytes(out)


_REQUEST_PSEUDO = (":method", ":scheme", ":path")


def request_header_problem(fields: list[tuple[str, str]]) -> str | None:
    """Why a request's header block is malformed (RFC 9113 8.3), or None.

    Kept as a list, not a dict, until checked: a pseudo-header given twice
    would otherwise mean its last value here and maybe its first to a proxy.
    """
    seen: set[str] = set()
    regular = False
    for name, _ in fields:
        if name.startswith(":"):
            if regular:
                return f"pseudo-header {name} after a regular header"
            if name not in _REQUEST_PSEUDO and name != ":authority":
                return f"unknown pseudo-header {name}"
            if name in seen:
                return f"pseudo-header {name} given twice"
            seen.add(name)
        else:
            regular = True
            if name != name.lower():
                return f"header name {name!r} is not lowercase"
    for name in _REQUEST_PSEUDO:
        if name not in seen:
            return f"no {name} pseudo-header"
    return None


def _hpack_int(value: int, prefix_bits: int) -> bytes:
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes((value,))
    out = bytearray((limit,))
    value -= limit
    while value >= 128:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class Http2Stream:
    """One stream's windows and state; `app` is what the layer above keeps on it."""

    __slots__ = (
        "app",
        "credit",
        "id",
        "local_closed",
        "queued",
        "recv_window",
        "remote_closed",
        "send_window",
    )

    def __init__(self, stream_id: int, send_window: int) -> None:
        self.id = stream_id
        self.send_window = send_window
        # What the peer may still send, and what we consumed but not yet granted.
        self.recv_window = STREAM_WINDOW
        self.credit = 0
        self.remote_closed = False
        self.local_closed = False
        # DATA entries of this stream waiting on a window (`Http2Sending`).
        self.queued = 0
        self.app: Any = None
