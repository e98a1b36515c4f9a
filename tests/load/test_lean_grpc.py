"""The benchmark's lean Cortex clients against the real grpcio scheduler, and back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest

from api.wire.grpc.clients import QuerierWorker, get_request, post_request
from api.wire.grpc.server import GrpcFrontDoor, start_grpc_server
from scheduler_core.model import QueueConfig
from scheduler_core.pb import frontendv2pb_pb2, httpgrpc_pb2
from scheduler_core.pb import schedulerpb_pb2 as pb
from scheduler_core.pb.frontendv2pb_pb2_grpc import FrontendForQuerierStub
from scheduler_core.runtime import SchedulerRuntime
from tests.load.h2lite import ClientConnection, GrpcCallError
from tests.load.lean_grpc import LeanFrontend, LeanQuerier, Result


@pytest.fixture
async def scheduler() -> AsyncIterator[GrpcFrontDoor]:
    runtime = SchedulerRuntime(QueueConfig(), forget_check_interval=3600.0)
    await runtime.start()
    door = await start_grpc_server(runtime, port=0)
    yield door
    await door.stop(0)
    await runtime.stop(drain_timeout=0)


async def test_requests_of_several_tenants_go_round_trip_through_the_grpcio_scheduler(
    scheduler: GrpcFrontDoor,
) -> None:
    address = f"127.0.0.1:{scheduler.port}"
    results: list[Result] = []
    frontend = await LeanFrontend(address, results.append).start()
    querier = LeanQuerier(address, "querier-1")
    worker = await querier.worker()
    loop = await frontend.open_loop()
    tenants = ["tenant-a", "tenant-b", "tenant-c"]
    for query_id, tenant in enumerate(tenants, start=1):
        request = get_request("/api/v1/query", [("query", "up"), ("time", "1700000000")])
        assert await loop.enqueue(query_id, tenant, request) == pb.OK
    for _ in tenants:
        msg = await asyncio.wait_for(worker.next(), 5)
        assert msg.frontendAddress == frontend.address
        await worker.answer(msg, body=f"result {msg.queryID}".encode())
    # Up to ten seconds (not one) for the results' way back: a busy machine's.
    for _ in range(1000):
        if len(results) == len(tenants):
            break
        await asyncio.sleep(0.01)
    assert sorted((r.query_id, r.org_id, r.body) for r in results) == [
        (1, "tenant-a", b"result 1"),
        (2, "tenant-b", b"result 2"),
        (3, "tenant-c", b"result 3"),
    ]
    querier.close()
    await frontend.close()


async def test_a_request_larger_than_grpcios_first_window_reaches_the_querier_whole(
    scheduler: GrpcFrontDoor,
) -> None:
    address = f"127.0.0.1:{scheduler.port}"
    frontend = await LeanFrontend(address, lambda result: None).start()
    querier = LeanQuerier(address, "querier-1")
    worker = await querier.worker()
    loop = await frontend.open_loop()
    padding = "p" * 300_000  # grpcio starts each window at 64 KiB
    request = post_request("/api/v1/query", [("query", "up"), ("padding", padding)])
    assert await loop.enqueue(1, "tenant-a", request) == pb.OK
    msg = await asyncio.wait_for(worker.next(), 5)
    assert msg.httpRequest.body == request.body
    querier.close()
    await frontend.close()


async def test_the_lean_frontend_answers_a_grpcio_querier_and_sees_its_tenant() -> None:
    results: list[Result] = []
    frontend = await LeanFrontend("127.0.0.1:1", results.append).serve()
    async with grpc.aio.insecure_channel(frontend.address) as channel:
        stub = FrontendForQuerierStub(channel)  # type: ignore[no-untyped-call]
        response = await stub.QueryResult(
            frontendv2pb_pb2.QueryResultRequest(
                queryID=42, httpResponse=httpgrpc_pb2.HTTPResponse(Code=500, body=b"boom")
            ),
            metadata=(("x-scope-orgid", "tenant-z"),),
        )
    assert response == frontendv2pb_pb2.QueryResultResponse()
    assert [(r.query_id, r.code, r.body, r.org_id) for r in results] == [
        (42, 500, b"boom", "tenant-z")
    ]
    await frontend.close()


async def test_a_grpc_error_status_from_the_scheduler_reaches_the_lean_caller(
    scheduler: GrpcFrontDoor,
) -> None:
    conn = await ClientConnection.connect(f"127.0.0.1:{scheduler.port}")
    with pytest.raises(GrpcCallError) as error:
        await conn.unary("/schedulerpb.SchedulerForQuerier/NoSuchMethod", b"")
    assert error.value.status == grpc.StatusCode.UNIMPLEMENTED.value[0]
    reply = await conn.unary(
        "/schedulerpb.SchedulerForQuerier/NotifyQuerierShutdown",
        pb.NotifyQuerierShutdownRequest(querierID="nobody").SerializeToString(),
    )
    assert reply == b""
    conn.close()


async def test_a_worker_of_a_grpcio_querier_and_a_lean_frontend_share_one_queue(
    scheduler: GrpcFrontDoor,
) -> None:
    address = f"127.0.0.1:{scheduler.port}"
    results: list[Result] = []
    frontend = await LeanFrontend(address, results.append).start()
    loop = await frontend.open_loop()
    async with grpc.aio.insecure_channel(address) as channel:
        worker = await QuerierWorker(channel, "grpcio-querier").open()
        assert await loop.enqueue(9, "tenant-a", get_request("/api/v1/labels", [])) == pb.OK
        msg = await worker.next()
        await worker.answer(msg, body=b"labels")
        await worker.close()
    assert [(r.query_id, r.body) for r in results] == [(9, b"labels")]
    await frontend.close()
