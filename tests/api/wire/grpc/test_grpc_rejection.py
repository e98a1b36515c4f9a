"""Cortex frontends: a query a rejection rule matches is answered 422, never queued."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from api.wire.grpc.admission import Admission
from api.wire.grpc.clients import CortexFrontend, QuerierWorker, get_request
from api.wire.grpc.server import start_grpc_server
from api.wire.observers import install_observer
from scheduler_core.admission_log import AdmissionLog
from scheduler_core.model import (
    PriorityDef,
    QueryAttribute,
    QueryPriority,
    QueryRejection,
    QueueConfig,
    TenantLimits,
)
from scheduler_core.pb import schedulerpb_pb2 as pb
from scheduler_core.rejection import REJECTION_MESSAGE
from scheduler_core.runtime import SchedulerRuntime
from tests.api.wire.grpc.conftest import NOW, Recorder, Scheduler

RANGE = "/prometheus/api/v1/query_range"
SERIES = "/prometheus/api/v1/series"
LIMITS = TenantLimits(
    query_priority=QueryPriority(True, 1, [PriorityDef(7, 0, [QueryAttribute(regex="errors")])]),
    query_rejection=QueryRejection(
        True, [QueryAttribute(regex="nothing"), QueryAttribute(regex="expensive")]
    ),
)


def recent_range(query: str) -> list[tuple[str, str]]:
    return [("query", query), ("start", str(NOW - 3600)), ("end", str(NOW)), ("step", "15s")]


@pytest.fixture
async def logged() -> AsyncIterator[tuple[Scheduler, AdmissionLog]]:
    runtime = SchedulerRuntime(QueueConfig(), forget_check_interval=3600.0)
    recorder = Recorder()
    install_observer(runtime, recorder)
    log = AdmissionLog()
    install_observer(runtime, log.traffic)
    await runtime.start()
    admission = Admission(runtime, wall_clock=lambda: NOW, admission_log=log)
    door = await start_grpc_server(runtime, port=0, host="127.0.0.1", admission=admission)
    sched = Scheduler(runtime, door, recorder, f"127.0.0.1:{door.port}")
    runtime.set_tenant_limits("team", LIMITS)
    yield sched, log
    for channel in sched.channels:
        await channel.close()
    await door.stop(0)
    await runtime.stop(drain_timeout=0)


async def test_a_rejected_query_gets_422_through_query_result_and_never_reaches_a_querier(
    logged: tuple[Scheduler, AdmissionLog],
) -> None:
    scheduler, log = logged
    frontend = await CortexFrontend(scheduler.address).start()
    loop = await frontend.open_loop()
    worker = await QuerierWorker(scheduler.channel(), "querier-1").open()

    rejected = get_request(RANGE, recent_range("sum(rate(expensive_total[5m]))"))
    assert await loop.enqueue(1, "team", rejected) == pb.OK
    result = await frontend.result(1)
    assert result.code == 422 and result.org_id == "team"
    assert REJECTION_MESSAGE in result.body.decode()
    assert "query_rejection.query_attributes[1]" in result.body.decode()

    accepted = get_request(RANGE, recent_range("sum(rate(errors_total[5m]))"))
    assert await loop.enqueue(2, "team", accepted) == pb.OK
    msg = await worker.next()
    assert msg.queryID == 2  # the rejected query 1 was never queued
    await worker.answer(msg, body=b"ok")
    assert (await frontend.result(2)).code == 200
    assert [r.id for r in scheduler.recorder.of("enqueued")] == [f"grpc:{frontend.address}:2"]

    counts = log.stats.counts("team")
    assert counts is not None
    assert counts.rejection(1)["version"] == 1 and counts.attribute(0, 0)["version"] == 1
    assert [r.rejected for r in log.traffic.requests("team")] == [True, False]
    await frontend.close()


async def test_series_calls_are_rejected_on_one_of_several_match_selectors(
    logged: tuple[Scheduler, AdmissionLog],
) -> None:
    scheduler, _ = logged
    frontend = await CortexFrontend(scheduler.address).start()
    loop = await frontend.open_loop()
    params = [("match[]", 'up{job="a",env="b"}'), ("match[]", "expensive_total")]
    params += [("start", str(NOW - 60)), ("end", str(NOW))]
    assert await loop.enqueue(3, "team", get_request(SERIES, params)) == pb.OK
    assert (await frontend.result(3)).code == 422
    await frontend.close()


async def test_a_federated_id_over_the_limit_gets_400_through_query_result_not_an_error_reply(
    logged: tuple[Scheduler, AdmissionLog],
) -> None:
    # A Cortex v1.15.3 frontend panicked on the ERROR reply this used to be,
    # and every other user's query on it was lost.
    scheduler, _ = logged
    scheduler.runtime.set_config(QueueConfig(max_federated_tenants=2))
    frontend = await CortexFrontend(scheduler.address).start()
    loop = await frontend.open_loop()
    query = get_request(RANGE, recent_range("up"))
    assert await loop.enqueue(1, "a|b|c", query) == pb.OK  # sorted, as Cortex sends it
    result = await frontend.result(1)
    assert result.code == 400 and result.org_id == "a|b|c"
    assert "names 3 tenants; at most 2 may be federated" in result.body.decode()
    assert len(scheduler.runtime.queue) == 0
    await frontend.close()
