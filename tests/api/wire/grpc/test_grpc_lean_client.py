"""The lean client's QueryResult call to a frontend that takes it but never answers.

A frontend that hangs (SIGSTOP, a stalled Go runtime) keeps its connection
open, so the call ends by its deadline, not by the connection. Found under
real Cortex: a scheduler shutting down while its frontend hung logged
"Future exception was never retrieved" when it closed the connection, and
every abandoned call kept its stream open on the reused connection.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any

from api.wire.grpc.http2_frames import CANCEL
from api.wire.grpc.lean_client import GrpcCallError, LeanChannels
from tests.api.wire.grpc.raw_http2 import RawPeer

QUERY_RESULT = "/frontendv2pb.FrontendForQuerier/QueryResult"


async def call_code(channels: LeanChannels, address: str) -> int:
    """The call's grpc-status; its error (and the frames it holds) not kept."""
    try:
        await channels.unary(address, QUERY_RESULT, b"", (), 0.2)
    except GrpcCallError as exc:
        return exc.code
    raise AssertionError("a frontend that never answers answered")


async def test_a_call_past_its_deadline_is_reset_and_leaves_no_error_for_the_loop() -> None:
    peers: list[RawPeer] = []

    async def hung_frontend(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = RawPeer(reader, writer)
        await peer.accept()  # the HTTP/2 handshake, then never a reply
        peer.ack_settings = peer.grant = False  # nor anything else
        peers.append(peer)

    server = await asyncio.start_server(hung_frontend, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    loop = asyncio.get_running_loop()
    unhandled: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: unhandled.append(context))
    channels = LeanChannels(None)
    try:
        code = await call_code(channels, f"127.0.0.1:{port}")
        (connection,) = channels._connections.values()
        open_streams = len(connection.streams)
        channels.close()
        await peers[0].until_closed()
        gc.collect()  # an abandoned future reports its error when it is collected
    finally:
        loop.set_exception_handler(previous)
        channels.close()
        for peer in peers:
            peer.close()
        server.close()
        await server.wait_closed()
    assert code == 4  # DEADLINE_EXCEEDED
    # As grpc-go and grpcio do at a client's deadline: RST_STREAM CANCEL, the
    # stream forgotten, so nothing can fail the finished call later.
    assert (peers[0].reply(1).reset, open_streams) == (CANCEL, 0)
    assert [context.get("message") for context in unhandled] == []
