"""Cortex frontends and queriers schedule through our gRPC server end to end."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from api.wire.grpc.clients import CortexFrontend, QuerierWorker, get_request, post_request
from scheduler_core.model import (
    BOTH,
    INGESTER,
    STORE_GATEWAY,
    PriorityDef,
    QueryAttribute,
    QueryPriority,
    TenantLimits,
)
from scheduler_core.pb import schedulerpb_pb2 as pb
from tests.api.wire.grpc.conftest import NOW, Scheduler

HOUR = 3600.0
RANGE = "/prometheus/api/v1/query_range"
INSTANT = "/prometheus/api/v1/query"


def recent_range(query: str) -> list[tuple[str, str]]:
    return [("query", query), ("start", str(NOW - HOUR)), ("end", str(NOW)), ("step", "15s")]


async def frontend_for(scheduler: Scheduler) -> CortexFrontend:
    return await CortexFrontend(scheduler.address).start()


async def test_requests_of_several_tenants_reach_a_querier_and_results_reach_the_frontend(
    scheduler: Scheduler,
) -> None:
    frontend = await frontend_for(scheduler)
    loop = await frontend.open_loop()
    worker = await QuerierWorker(scheduler.channel(), "querier-1").open()
    sent = {1: "tenant-a", 2: "tenant-b", 3: "tenant-c"}
    for query_id, tenant in sent.items():
        request = get_request(RANGE, recent_range(f"up{{t={query_id}}}"))
        assert await loop.enqueue(query_id, tenant, request) == pb.OK

    seen = {}
    for _ in sent:
        msg = await worker.next()
        seen[msg.queryID] = msg
        await worker.answer(msg, body=f"result {msg.queryID}".encode())

    assert {q: m.userID for q, m in seen.items()} == sent
    assert all(m.frontendAddress == frontend.address and m.isRoot for m in seen.values())
    assert all(m.fragmentID == 0 and m.httpRequest.method == "GET" for m in seen.values())
    for query_id, tenant in sent.items():
        result = await frontend.result(query_id)
        assert (result.code, result.body, result.org_id) == (
            200,
            f"result {query_id}".encode(),
            tenant,
        )
    assert len(await scheduler.recorder.wait_for("completed", 3)) == 3
    await frontend.close()


async def test_component_and_priority_are_computed_from_promql_in_get_and_post(
    scheduler: Scheduler,
) -> None:
    scheduler.runtime.set_tenant_limits(
        "team",
        TenantLimits(
            query_priority=QueryPriority(
                enabled=True,
                default_priority=1,
                priorities=[
                    PriorityDef(9, query_attributes=[QueryAttribute(regex="errors_total")]),
                    PriorityDef(5, query_attributes=[QueryAttribute(api_type="query")]),
                ],
            )
        ),
    )
    frontend = await frontend_for(scheduler)
    loop = await frontend.open_loop()
    old = [("query", "sum(rate(errors_total[5m]))"), ("start", str(NOW - 30 * 24 * HOUR))]
    old += [("end", str(NOW - 20 * 24 * HOUR)), ("step", "1h")]
    await loop.enqueue(1, "team", get_request(RANGE, old))
    await loop.enqueue(2, "team", post_request(RANGE, recent_range("rate(cpu_seconds[1m])")))
    await loop.enqueue(3, "team", post_request(INSTANT, [("query", "up"), ("time", str(NOW))]))
    week = [("query", "max_over_time(mem_bytes[7d])"), ("time", str(NOW))]
    await loop.enqueue(4, "team", get_request(INSTANT, week))

    enqueued = await scheduler.recorder.wait_for("enqueued", 4)

    by_id = {r.payload.query_id: (r.component, r.priority, r.api_type) for r in enqueued}
    assert by_id == {
        1: (STORE_GATEWAY, 9, "query_range"),
        2: (INGESTER, 1, "query_range"),
        3: (INGESTER, 5, "query"),
        4: (BOTH, 5, "query"),
    }
    await frontend.close()


async def test_higher_priority_is_dispatched_first(scheduler: Scheduler) -> None:
    rules = [PriorityDef(7, query_attributes=[QueryAttribute(regex="urgent")])]
    limits = TenantLimits(query_priority=QueryPriority(enabled=True, priorities=rules))
    scheduler.runtime.set_tenant_limits("t", limits)
    frontend = await frontend_for(scheduler)
    loop = await frontend.open_loop()
    await loop.enqueue(1, "t", get_request(RANGE, recent_range("routine")))
    await loop.enqueue(2, "t", get_request(RANGE, recent_range("urgent_metric")))

    worker = await QuerierWorker(scheduler.channel(), "q").open()

    assert (await worker.next()).queryID == 2
    await frontend.close()


async def test_enqueue_over_the_tenant_limit_is_answered_too_many_requests(
    scheduler: Scheduler,
) -> None:
    scheduler.runtime.set_tenant_limits("small", TenantLimits(max_outstanding=2))
    frontend = await frontend_for(scheduler)
    loop = await frontend.open_loop()
    statuses = [
        await loop.enqueue(i, "small", get_request(RANGE, recent_range("up"))) for i in range(3)
    ]

    assert statuses == [pb.OK, pb.OK, pb.TOO_MANY_REQUESTS_PER_TENANT]
    assert await loop.enqueue(9, "other", get_request(RANGE, recent_range("up"))) == pb.OK
    await frontend.close()


async def test_a_federated_id_is_served_under_its_combined_limits_then_leaves_nothing(
    scheduler: Scheduler,
) -> None:
    scheduler.runtime.set_tenant_limits("a", TenantLimits(max_queriers=1))
    scheduler.runtime.set_tenant_limits("b", TenantLimits(max_outstanding=1))
    frontend = await frontend_for(scheduler)
    loop = await frontend.open_loop()
    workers = [await QuerierWorker(scheduler.channel(), f"q{i}").open() for i in range(3)]
    request = get_request(RANGE, recent_range("up"))

    assert await loop.enqueue(1, "a|b", request) == pb.OK
    # b's outstanding limit and a's one-querier shard, under the whole ID.
    assert await loop.enqueue(2, "a|b", request) == pb.TOO_MANY_REQUESTS_PER_TENANT
    serving = scheduler.runtime.queue.serving("a|b")
    assert serving.shard is not None and len(serving.shard) == 1
    msg = await workers[int(serving.shard[0][1:])].next()
    assert msg.userID == "a|b"
    await workers[int(serving.shard[0][1:])].answer(msg, body=b"ok")
    assert (await frontend.result(1)).org_id == "a|b"
    await scheduler.recorder.wait_for("completed", 1)

    assert scheduler.runtime.tenant_limits("a|b") == TenantLimits()
    assert scheduler.runtime.queue.serving("a|b").shard is None
    assert "a|b" not in {t.tenant_id for t in scheduler.runtime.queue.snapshot().tenants}
    await frontend.close()


async def test_cancel_removes_a_queued_request_and_is_answered_ok(scheduler: Scheduler) -> None:
    frontend = await frontend_for(scheduler)
    loop = await frontend.open_loop()
    await loop.enqueue(1, "t", get_request(RANGE, recent_range("up")))
    await loop.enqueue(2, "t", get_request(RANGE, recent_range("up")))

    assert await loop.cancel(1) == pb.OK
    assert await loop.cancel(12345) == pb.OK
    assert scheduler.runtime.queue.tenant_length("t") == 1
    worker = await QuerierWorker(scheduler.channel(), "q").open()
    assert (await worker.next()).queryID == 2
    await frontend.close()


async def test_cancel_while_a_querier_runs_the_request_ends_that_worker_stream(
    scheduler: Scheduler,
) -> None:
    frontend = await frontend_for(scheduler)
    loop = await frontend.open_loop()
    worker = await QuerierWorker(scheduler.channel(), "q").open()
    await loop.enqueue(1, "t", get_request(RANGE, recent_range("slow")))
    await worker.next()

    assert await loop.cancel(1) == pb.OK

    with pytest.raises(grpc.aio.AioRpcError) as ended:
        await worker.next()
    assert ended.value.code() == grpc.StatusCode.CANCELLED
    await loop.enqueue(2, "t", get_request(RANGE, recent_range("next")))
    fresh = await QuerierWorker(scheduler.channel(), "q").open()
    assert (await fresh.next()).queryID == 2
    await frontend.close()


async def test_a_broken_querier_stream_retries_once_then_reports_500_to_the_frontend(
    scheduler: Scheduler,
) -> None:
    frontend = await frontend_for(scheduler)
    loop = await frontend.open_loop()
    await loop.enqueue(7, "tenant-x", get_request(RANGE, recent_range("up")))

    for attempt in (1, 2):
        worker = await QuerierWorker(scheduler.channel(), f"q{attempt}").open()
        assert (await worker.next()).queryID == 7
        worker.break_stream()

    result = await frontend.result(7)
    assert (result.code, result.org_id) == (500, "tenant-x")
    assert b"disconnected" in result.body
    assert [r.id for r in scheduler.recorder.of("failed")] == [f"grpc:{frontend.address}:7"]
    await frontend.close()


async def test_closing_the_frontend_loop_cancels_its_queued_requests(
    scheduler: Scheduler,
) -> None:
    frontend = await frontend_for(scheduler)
    leaving = await frontend.open_loop(address="frontend-leaving:9095")
    staying = await frontend.open_loop()
    for query_id in (1, 2, 3):
        await leaving.enqueue(query_id, "t", get_request(RANGE, recent_range("up")))
    await staying.enqueue(4, "t", get_request(RANGE, recent_range("up")))

    await leaving.close()

    cancelled = await scheduler.recorder.wait_for("cancelled", 3)
    assert sorted(r.payload.query_id for r in cancelled) == [1, 2, 3]
    assert scheduler.runtime.queue.tenant_length("t") == 1
    assert [c.address for c in scheduler.door.frontend_connections()] == [frontend.address]
    await frontend.close()


async def test_a_querier_that_announced_shutdown_gets_no_more_work(scheduler: Scheduler) -> None:
    frontend = await frontend_for(scheduler)
    loop = await frontend.open_loop()
    leaving = await QuerierWorker(scheduler.channel(), "leaving").open()
    await leaving.notify_shutdown()

    await loop.enqueue(1, "t", get_request(RANGE, recent_range("up")))
    staying = await QuerierWorker(scheduler.channel(), "staying").open()

    assert (await staying.next()).queryID == 1
    with pytest.raises(EOFError):
        await leaving.next()
    await frontend.close()


async def test_a_stopping_scheduler_answers_shutting_down_and_still_dispatches(
    scheduler: Scheduler,
) -> None:
    frontend = await frontend_for(scheduler)
    loop = await frontend.open_loop()
    await loop.enqueue(1, "t", get_request(RANGE, recent_range("up")))
    stopping = asyncio.ensure_future(scheduler.runtime.stop(drain_timeout=5.0))
    await asyncio.sleep(0)

    status = await loop.enqueue(2, "t", get_request(RANGE, recent_range("up")))
    with pytest.raises(RuntimeError, match="SHUTTING_DOWN"):
        await frontend.open_loop()
    worker = await QuerierWorker(scheduler.channel(), "q").open()
    msg = await worker.next()
    await worker.answer(msg)

    assert status == pb.SHUTTING_DOWN
    assert msg.queryID == 1
    assert await asyncio.wait_for(stopping, 5.0) == []
    await frontend.close()


async def test_requests_a_lost_querier_held_are_served_again_in_their_arrival_order(
    scheduler: Scheduler,
) -> None:
    frontend = await frontend_for(scheduler)
    loop = await frontend.open_loop()
    for round_ in range(5):  # its streams end in a different order from run to run
        channel = scheduler.channel()
        workers = [await QuerierWorker(channel, "lost").open() for _ in range(3)]
        ids = [10 * round_ + n for n in range(1, 4)]
        for query_id in ids:
            await loop.enqueue(query_id, "t", get_request(RANGE, recent_range(f"q{query_id}")))
        assert sorted([(await w.next()).queryID for w in workers]) == ids
        await channel.close()  # the querier is gone: every stream ends at once
        fresh = await QuerierWorker(scheduler.channel(), "next").open()
        served = []
        for _ in ids:
            msg = await fresh.next()
            served.append(msg.queryID)
            await fresh.answer(msg)
        assert served == ids
        await fresh.close()
    await frontend.close()
