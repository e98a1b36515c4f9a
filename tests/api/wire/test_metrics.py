"""/metrics: the Cortex/Mimir names, from counters and the live snapshot."""

from __future__ import annotations

import gzip
from typing import Any

import pytest
from django.test import AsyncClient
from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.parser import text_string_to_metric_families

from api.cluster.replicas import replica_id
from api.wire import metrics, runtime_host  # importing metrics registers the observer
from api.wire.grpc.tls_handshakes import REASONS
from scheduler_core.errors import DuplicateRequest, TooManyRequests
from scheduler_core.model import PriorityDef, QueryPriority, Request, TenantLimits
from tests.fakes import FakeClock

pytestmark = pytest.mark.django_db(transaction=True)


async def scrape() -> str:
    response = await AsyncClient().get("/metrics")
    assert response.status_code == 200
    return response.content.decode()


async def test_queue_length_is_split_by_tenant_priority_and_queue_type(host: Any) -> None:
    runtime = host.runtime
    runtime.set_tenant_limits("m-prio", TenantLimits(query_priority=QueryPriority(enabled=True)))
    runtime.enqueue(Request(id="m1", tenant_id="m-prio", priority=3))
    runtime.enqueue(Request(id="m2", tenant_id="m-fifo"))
    text = await scrape()
    assert (
        'cortex_query_scheduler_queue_length{priority="3",type="priority",user="m-prio"} 1.0'
        in text
    )
    assert 'cortex_query_scheduler_queue_length{priority="0",type="fifo",user="m-fifo"} 1.0' in text
    assert 'cortex_request_queue_requests_total{priority="3",user="m-prio"}' in text


async def test_a_scrape_is_text_format_0_0_4_gzipped_when_the_scraper_accepts_gzip(
    host: Any,
) -> None:
    host.runtime.enqueue(Request(id="m-gz", tenant_id="m-gz"))
    client = AsyncClient()
    plain = await client.get("/metrics")
    zipped = await client.get("/metrics", headers={"Accept-Encoding": "gzip, deflate"})
    assert "Content-Encoding" not in plain
    assert zipped["Content-Encoding"] == "gzip"
    assert plain["Vary"] == zipped["Vary"] == "Accept-Encoding"
    # Text format 0.0.4, which every scraper and Go's expfmt decoder reads.
    assert zipped["Content-Type"] == plain["Content-Type"] == CONTENT_TYPE_PLAIN_0_0_4
    text = gzip.decompress(zipped.content).decode()
    assert len(zipped.content) < len(text)
    line = 'cortex_query_scheduler_queue_length{priority="0",type="fifo",user="m-gz"} 1.0'
    assert line in text.splitlines() and line in plain.content.decode().splitlines()
    names = [
        {f.name for f in text_string_to_metric_families(t)} for t in (text, plain.content.decode())
    ]
    assert names[0] == names[1]


async def test_workers_in_flight_and_waits_are_exported(host: Any) -> None:
    runtime = host.runtime
    worker = runtime.connect_querier("m-q")
    runtime.enqueue(Request(id="m3", tenant_id="m-t", component="store-gateway"))
    await runtime.next_request("m-q", worker)
    text = await scrape()
    assert "cortex_query_scheduler_connected_querier_clients 1.0" in text
    assert (
        'cortex_query_scheduler_querier_inflight_requests{query_component="store-gateway"} 1.0'
        in text
    )
    assert (
        'cortex_query_scheduler_queue_duration_seconds_count{additional_queue_dimensions="store-gateway"'
        in text
    )
    assert "cortex_query_scheduler_connected_frontend_clients 0.0" in text


async def test_the_worker_time_each_tenant_held_is_counted_as_its_runs_end(host: Any) -> None:
    runtime = host.runtime
    worker = runtime.connect_querier("m-q-time")
    runtime.enqueue(Request(id="m-held", tenant_id="m-held"))
    runtime.enqueue(Request(id="m-queued", tenant_id="m-held"))
    request = await runtime.next_request("m-q-time", worker)
    assert request.dispatched_at is not None
    request.dispatched_at -= 2.5  # as if it had run 2.5 s (no sleep)
    runtime.complete(request.id)
    runtime.cancel("m-queued")  # never held a worker: adds nothing
    text = await scrape()
    (line,) = [
        row
        for row in text.splitlines()
        if row.startswith('queue_inspector_querier_seconds_total{user="m-held"}')
    ]
    assert 2.5 <= float(line.split()[-1]) < 3.5
    (row,) = [r for r in host.usage_block(500)["tenants"] if r["tenant"] == "m-held"]
    assert row["ended"] == 1 and 2.5 <= row["querier_seconds"] < 3.5


async def test_the_config_version_the_scheduler_runs_is_exported(host: Any) -> None:
    assert host.applied_version >= 0  # the host applied the database's config on start
    text = await scrape()
    assert f"queue_inspector_config_version {float(host.applied_version)}" in text.splitlines()


async def test_discards_and_cancels_are_counted(host: Any) -> None:
    runtime = host.runtime
    runtime.set_tenant_limits("m-full", TenantLimits(max_outstanding=1))
    runtime.enqueue(Request(id="m4", tenant_id="m-full"))
    with pytest.raises(TooManyRequests):
        runtime.enqueue(Request(id="m5", tenant_id="m-full"))
    runtime.cancel("m4")
    text = await scrape()
    assert 'cortex_query_scheduler_discarded_requests_total{priority="0",user="m-full"} 1.0' in text
    assert 'cortex_query_scheduler_cancelled_requests_total{user="m-full"} 1.0' in text


async def test_each_way_a_request_fails_back_counts_on_its_own_fixed_reason(
    settings: Any,
) -> None:
    settings.GRPC_PORT = 0
    runtime = (await runtime_host.ensure_started()).runtime
    runtime.enqueue(Request(id="m-f-op", tenant_id="m-failed"))
    runtime.fail("m-f-op", "cancelled by operator ann: runaway")
    runtime.enqueue(Request(id="m-f-lost", tenant_id="m-failed"))
    for querier in ("m-f-q1", "m-f-q2"):  # lost twice: its one retry spent
        worker = runtime.connect_querier(querier)
        await runtime.next_request(querier, worker)
        runtime.disconnect_querier_worker(querier, worker)
    runtime.enqueue(Request(id="m-f-left", tenant_id="m-failed"))
    await runtime_host.shutdown(drain_timeout=0)
    try:
        await runtime_host.ensure_started()  # the counters outlive a runtime, as the process's
        failed = [
            line
            for line in (await scrape()).splitlines()
            if line.startswith("queue_inspector_failed_requests_total{")
            and 'user="m-failed"' in line
        ]
    finally:
        await runtime_host.shutdown(drain_timeout=0)
    assert sorted(failed) == [
        f'queue_inspector_failed_requests_total{{reason="{reason}",user="m-failed"}} 1.0'
        for reason in ("operator_cancelled", "querier_disconnected", "shutting_down")
    ]


async def test_the_reconcile_failures_and_the_last_success_are_exported(host: Any) -> None:
    lines = (await scrape()).splitlines()
    assert "queue_inspector_config_reconcile_failures_total 0.0" in lines
    (stamp,) = [
        line.split()[1]
        for line in lines
        if line.startswith("queue_inspector_config_last_reconcile_success_timestamp_seconds ")
    ]
    assert float(stamp) == host.reconciles.last_success


async def test_a_request_refused_for_another_reason_than_the_limit_is_not_counted_a_429(
    host: Any,
) -> None:
    runtime = host.runtime
    runtime.enqueue(Request(id="m-dup", tenant_id="m-dup"))
    with pytest.raises(DuplicateRequest):
        runtime.enqueue(Request(id="m-dup", tenant_id="m-dup"))
    text = await scrape()
    assert 'cortex_request_queue_requests_total{priority="0",user="m-dup"} 1.0' in text
    assert 'discarded_requests_total{priority="0",user="m-dup"}' not in text


async def test_counters_and_histograms_export_no_created_series_as_cortex_exports_none(
    host: Any,
) -> None:
    runtime = host.runtime
    worker = runtime.connect_querier("m-created-q")
    runtime.enqueue(Request(id="m6", tenant_id="m-created"))
    await runtime.next_request("m-created-q", worker)
    text = await scrape()
    assert 'cortex_request_queue_requests_total{priority="0",user="m-created"} 1.0' in text
    assert "cortex_query_scheduler_queue_duration_seconds_count" in text
    # A `_created` sample is a stored series of its own: one more per tenant.
    assert [line for line in text.splitlines() if "_created" in line] == []


async def test_the_oldest_wait_is_the_age_of_the_oldest_queued_request(host: Any) -> None:
    runtime = host.runtime
    text = await scrape()
    assert "cortex_query_scheduler_queue_max_wait_seconds 0.0" in text
    runtime.enqueue(Request(id="w1", tenant_id="m-wait"))
    text = await scrape()
    line = next(
        ln
        for ln in text.splitlines()
        if ln.startswith("cortex_query_scheduler_queue_max_wait_seconds ")
    )
    assert float(line.split()[1]) > 0.0


def test_the_peak_queue_length_outlives_a_burst_drained_between_scrapes() -> None:
    peaks = metrics.QueuePeaks()
    for length in (1, 2, 3):
        peaks.note("a", length)
    # Drained to 1 before the scrape: the window's peak, 3, is reported.
    assert peaks.collect({"a": 1, "b": 2}) == [("a", 3), ("b", 2)]
    # The next window starts at the standing depth.
    assert peaks.collect({"a": 0}) == [("a", 1), ("b", 2)]
    # A drained tenant is reported 0 once, then dropped.
    assert peaks.collect({}) == [("a", 0), ("b", 0)]
    assert peaks.collect({}) == []


async def test_the_peak_queue_length_is_exported_per_tenant(host: Any) -> None:
    runtime = host.runtime
    worker = runtime.connect_querier("m-peak-q")
    for n in range(3):
        runtime.enqueue(Request(id=f"pk{n}", tenant_id="m-peak"))
    await runtime.next_request("m-peak-q", worker)
    text = await scrape()
    assert 'cortex_query_scheduler_max_queue_length{user="m-peak"} 3.0' in text
    text = await scrape()
    assert 'cortex_query_scheduler_max_queue_length{user="m-peak"} 2.0' in text


async def test_a_reserved_idle_querier_reports_how_long_it_has_been_idle(host: Any) -> None:
    runtime = host.runtime
    runtime.set_tenant_limits(
        "m-res",
        TenantLimits(
            query_priority=QueryPriority(
                enabled=True,
                priorities=[PriorityDef(priority=5, reserved_queriers=1, query_attributes=[])],
            )
        ),
    )
    runtime.connect_querier("m-res-q1")
    runtime.connect_querier("m-res-q2")
    text = await scrape()
    assert 'queue_inspector_reserved_querier_idle_seconds{querier="m-res-q1"}' in text
    assert 'querier="m-res-q2"' not in text
    assert f'queue_inspector_replica_up{{replica="{replica_id()}"}} 1.0' in text


async def test_the_process_and_its_event_loop_are_exported_as_every_prometheus_target_is(
    host: Any,
) -> None:
    worker = host.runtime.connect_querier("m-cost")
    host.runtime.enqueue(Request(id="m-cost-1", tenant_id="m-cost"))
    await host.runtime.next_request("m-cost", worker)
    assert host.stats.dispatched_total == 1
    text = await scrape()
    for name in (
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "python_gc_objects_collected_total",
        "python_info",
        "queue_inspector_event_loop_cpu_seconds_total",
        "queue_inspector_event_loop_lag_seconds_count",
    ):
        assert f"\n{name}" in text, name
    loop_cpu = next(
        float(line.split()[-1])
        for line in text.splitlines()
        if line.startswith("queue_inspector_event_loop_cpu_seconds_total ")
    )
    assert loop_cpu > 0.0


async def test_refused_grpc_tls_handshakes_are_exported_by_each_fixed_reason_before_any() -> None:
    # Alerts need the series before the first failure: absent, `rate()` is no data.
    families = {f.name: f for f in text_string_to_metric_families(await scrape())}

    family = families["queue_inspector_grpc_tls_handshake_failures"]
    assert family.type == "counter"
    assert sorted(s.labels["reason"] for s in family.samples) == sorted(REASONS)
    assert {tuple(s.labels) for s in family.samples} == {("reason",)}


async def test_a_drained_tenants_queue_length_reads_0_until_it_has_been_idle_for_the_delay(
    host: Any, janitor_clock: FakeClock
) -> None:
    # As Cortex's gauge does until its inactive-user cleanup: a dashboard's
    # line falls to 0 instead of stopping.
    runtime = host.runtime
    row = 'cortex_query_scheduler_queue_length{priority="0",type="fifo",user="m-drain"}'
    runtime.enqueue(Request(id="m-drain-1", tenant_id="m-drain"))
    assert f"{row} 1.0" in await scrape()
    worker = runtime.connect_querier("m-drain-q")
    runtime.complete((await runtime.next_request("m-drain-q", worker)).id)
    assert f"{row} 0.0" in await scrape()
    assert f"{row} 0.0" in await scrape()
    janitor_clock.now += 899
    assert f"{row} 0.0" in await scrape()
    janitor_clock.now += 181  # the janitor looks at most every 3 minutes
    assert row not in await scrape()
