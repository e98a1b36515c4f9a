"""A unary call whose request does not decode is the client's error, on both servers.

`NotifyQuerierShutdown` and `QueryResult` are unary. A request body that is
not its message must come back as INVALID_ARGUMENT naming what was wrong,
as a malformed stream message does, with no error logged by the server and
nothing else changed.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import grpc
import pytest

from api.wire.grpc.server import GrpcFrontDoor
from scheduler_core.pb import schedulerpb_pb2 as pb
from tests.api.wire.grpc.conftest import our_errors
from tests.api.wire.grpc.test_grpc_frontend_answers import running_door, stopped

UNARY = [
    "/schedulerpb.SchedulerForQuerier/NotifyQuerierShutdown",
    "/frontendv2pb.FrontendForQuerier/QueryResult",
]
GARBLED = b"\x12\x05ab"  # a string field cut short


@pytest.fixture(params=["lean", "grpcio"])
async def door(request: pytest.FixtureRequest) -> AsyncIterator[GrpcFrontDoor]:
    door = await running_door(request.param)
    yield door
    await stopped(door)


async def unary_status(door: GrpcFrontDoor, method: str, payload: bytes) -> grpc.aio.AioRpcError:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{door.port}") as channel:
        call = channel.unary_unary(
            method, request_serializer=lambda b: b, response_deserializer=lambda b: b
        )
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await call(payload, timeout=5)
    return failed.value


@pytest.mark.parametrize("method", UNARY)
async def test_a_unary_request_that_does_not_decode_is_invalid_argument_and_logs_no_error(
    door: GrpcFrontDoor, method: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        refused = await unary_status(door, method, GARBLED)

    assert refused.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (refused.details() or "").startswith("malformed message:")
    assert our_errors(caplog.records) == []


async def test_a_querier_shutdown_notice_that_decodes_still_works_on_both_servers(
    door: GrpcFrontDoor,
) -> None:
    request = pb.NotifyQuerierShutdownRequest(querierID="q-1")
    async with grpc.aio.insecure_channel(f"127.0.0.1:{door.port}") as channel:
        notify = channel.unary_unary(
            UNARY[0],
            request_serializer=pb.NotifyQuerierShutdownRequest.SerializeToString,
            response_deserializer=pb.NotifyQuerierShutdownResponse.FromString,
        )
        assert await notify(request, timeout=5) == pb.NotifyQuerierShutdownResponse()
