"""Cortex gRPC clients against a real Daphne process that also serves gRPC.

The server is the session's `daphne_server` (its own database and GRPC_PORT);
config is written through the services from another process, as an editor
would, and reaches the server through its reconcile loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from api.wire.grpc.clients import (
    CortexFrontend,
    FrontendLoop,
    QuerierWorker,
    get_request,
    post_request,
)
from loadgen.daphne_process import DaphneProcess
from scheduler_core.pb import schedulerpb_pb2 as pb

HOUR = 3600.0
RANGE = "/prometheus/api/v1/query_range"
INSTANT = "/prometheus/api/v1/query"


def write_config(server: DaphneProcess, tenant: str, config: dict[str, Any], layout: str) -> None:
    server.run_python(
        "from api.store.models import ConfigRevision, Tenant\n"
        "from api.store.services import settings_update, tenant_put\n"
        f"settings_update(changes={{'layout': {layout!r}}}, expected_version=None,\n"
        "                author=None, source=ConfigRevision.Source.CLI)\n"
        f"tid, cfg = {tenant!r}, {config!r}\n"
        "row = Tenant.objects.filter(tenant_id=tid).first()\n"
        "tenant_put(tenant_id=tid, config=cfg, author=None, source='cli',\n"
        "           expected_version=row.version if row else None)\n"
    )


def recent(query: str) -> list[tuple[str, str]]:
    now = time.time()
    return [("query", query), ("start", str(now - HOUR)), ("end", str(now)), ("step", "30")]


async def until_limit_applies(loop: FrontendLoop, tenant: str, limit: int, base_id: int) -> None:
    """Probe until the tenant's outstanding limit (written last) is live."""
    deadline = time.monotonic() + 20
    while True:
        ids = range(base_id, base_id + limit + 1)
        statuses = [await loop.enqueue(i, tenant, get_request(RANGE, recent("probe"))) for i in ids]
        for i in ids:
            await loop.cancel(i)
        if statuses[-1] == pb.TOO_MANY_REQUESTS_PER_TENANT and statuses[:-1] == [pb.OK] * limit:
            return
        assert time.monotonic() < deadline, f"limit of {tenant} never applied: {statuses}"
        base_id += limit + 1
        await asyncio.sleep(0.2)


@pytest.fixture
async def address(daphne_server: DaphneProcess) -> AsyncIterator[str]:
    """The server's gRPC address, once it accepts connections."""
    target = f"127.0.0.1:{daphne_server.grpc_port}"
    async with grpc.aio.insecure_channel(target) as channel:
        await asyncio.wait_for(channel.channel_ready(), 20)
    yield target


@pytest.fixture
async def frontend(address: str) -> AsyncIterator[CortexFrontend]:
    fe = await CortexFrontend(address).start()
    yield fe
    await fe.close()


@pytest.mark.parametrize("layout", ["tenant-first", "component-first"])
async def test_priorities_from_real_promql_order_dispatch_on_a_real_server(
    daphne_server: DaphneProcess, address: str, frontend: CortexFrontend, layout: str
) -> None:
    tenant = f"grpc-team-{layout}"
    rules = [
        {"priority": 9, "query_attributes": [{"regex": "errors_total"}]},
        {"priority": 5, "query_attributes": [{"api_type": "query"}]},
    ]
    config = {
        "max_outstanding_requests_per_tenant": 3,
        "query_priority": {"enabled": True, "default_priority": 1, "priorities": rules},
    }
    write_config(daphne_server, tenant, config, layout)
    loop = await frontend.open_loop()
    await until_limit_applies(loop, tenant, 3, base_id=1000)

    assert (
        await loop.enqueue(1, tenant, get_request(RANGE, recent("rate(cpu_seconds[1m])"))) == pb.OK
    )
    assert await loop.enqueue(2, tenant, post_request(INSTANT, [("query", "up")])) == pb.OK
    errors = post_request(RANGE, recent('sum(rate(errors_total{job="api"}[5m]))'))
    assert await loop.enqueue(3, tenant, errors) == pb.OK
    assert await loop.enqueue(4, tenant, get_request(RANGE, recent("up"))) == (
        pb.TOO_MANY_REQUESTS_PER_TENANT
    )
    async with grpc.aio.insecure_channel(address) as channel:
        worker = await QuerierWorker(channel, f"grpc-querier-{layout}").open()
        order = []
        for _ in range(3):
            msg = await worker.next(timeout=10)
            order.append(msg.queryID)
            await worker.answer(msg, body=b'{"status":"success"}')
        await worker.close()

    assert order == [3, 2, 1]
    for query_id in order:
        result = await frontend.result(query_id, timeout=10)
        assert (result.code, result.org_id) == (200, tenant)


async def test_cancel_broken_querier_and_closed_frontend_on_a_real_server(
    address: str, frontend: CortexFrontend
) -> None:
    loop = await frontend.open_loop()
    leaving = await frontend.open_loop(address=f"leaving-{frontend.address}")
    await leaving.enqueue(1, "grpc-x", get_request(RANGE, recent("up")))
    await leaving.enqueue(2, "grpc-x", get_request(RANGE, recent("up")))
    await leaving.close()
    await loop.enqueue(3, "grpc-x", get_request(RANGE, recent("up")))
    assert await loop.cancel(3) == pb.OK
    await loop.enqueue(4, "grpc-x", get_request(RANGE, recent("up")))

    async with grpc.aio.insecure_channel(address) as channel:
        for attempt in (1, 2):
            worker = await QuerierWorker(channel, f"grpc-breaking-{attempt}").open()
            assert (await worker.next(timeout=10)).queryID == 4
            worker.break_stream()

    failed = await frontend.result(4, timeout=10)
    assert (failed.code, failed.org_id) == (500, "grpc-x")
    assert b"disconnected" in failed.body


async def test_shutdown_notice_and_malformed_input_on_a_real_server(
    address: str, frontend: CortexFrontend
) -> None:
    loop = await frontend.open_loop()
    async with grpc.aio.insecure_channel(address) as channel:
        leaving = await QuerierWorker(channel, "grpc-leaving").open()
        await leaving.notify_shutdown()
        with pytest.raises(EOFError):
            await leaving.next(timeout=10)
        raw = channel.stream_stream(
            "/schedulerpb.SchedulerForFrontend/FrontendLoop",
            request_serializer=lambda b: b,
            response_deserializer=lambda b: b,
        )()
        await raw.write(b"\xff\xff\xff")
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await raw.read()
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT

        assert await loop.enqueue(1, "grpc-y", get_request(INSTANT, [("query", "up")])) == pb.OK
        worker = await QuerierWorker(channel, "grpc-staying").open()
        msg = await worker.next(timeout=10)
        await worker.answer(msg)
        await worker.close()

    assert msg.queryID == 1
    assert (await frontend.result(1, timeout=10)).code == 200
