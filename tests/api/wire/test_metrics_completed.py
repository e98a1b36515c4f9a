"""/metrics accounts for every accepted request: completed, failed, cancelled, queued or running.

`queue_inspector_completed_requests_total{user}` counts the requests a
querier's result ended, over both protocols, and
`queue_inspector_inflight_requests{user}` those still running, so that per
tenant `cortex_request_queue_requests_total` = completed + failed +
cancelled + queued + running, read from one scrape.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from channels.testing import WebsocketCommunicator
from django.test import AsyncClient
from prometheus_client.parser import text_string_to_metric_families

from api.store.services import api_token_issue
from api.wire import runtime_host
from api.wire.grpc.clients import CortexFrontend, FrontendLoop, QuerierWorker, get_request
from api.wire.observers import install_observer
from loadgen.daphne_process import free_port
from scheduler_core.model import Request
from scheduler_core.pb import schedulerpb_pb2 as pb
from tests.api.wire.test_consumers_ws import connect, enqueue, querier
from tests.fakes import FakeClock
from tests.polling import until

pytestmark = pytest.mark.django_db(transaction=True)

WS, GRPC = "oc-ws", "oc-grpc"
ENDS = ("completed", "failed", "cancelled")


class Ends:
    """Runtime observer: how many requests of each tenant ended, and how (to wait on)."""

    def __init__(self) -> None:
        self.seen: Counter[tuple[str, str]] = Counter()

    def on_completed(self, request: Request) -> None:
        self.seen["completed", request.tenant_id] += 1

    def on_failed(self, request: Request, reason: str) -> None:
        self.seen["failed", request.tenant_id] += 1

    def on_cancelled(self, request: Request) -> None:
        self.seen["cancelled", request.tenant_id] += 1

    async def reach(self, how: str, tenant: str, count: int) -> None:
        await until(lambda: self.seen[how, tenant] >= count)
        assert self.seen[how, tenant] == count


async def scrape() -> str:
    response = await AsyncClient().get("/metrics")
    assert response.status_code == 200
    return response.content.decode()


def by_tenant(text: str) -> dict[str, dict[str, float]]:
    """Each tenant's enqueued, completed, failed, cancelled, queued and running, summed."""
    names = {
        "cortex_request_queue_requests_total": "enqueued",
        "queue_inspector_completed_requests_total": "completed",
        "queue_inspector_failed_requests_total": "failed",
        "cortex_query_scheduler_cancelled_requests_total": "cancelled",
        "cortex_query_scheduler_queue_length": "queued",
        "queue_inspector_inflight_requests": "running",
    }
    out: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = names.get(sample.name)
            if key is not None:
                row = out.setdefault(sample.labels["user"], dict.fromkeys(names.values(), 0.0))
                row[key] += sample.value
    return out


def unaccounted(row: dict[str, float]) -> float:
    """Accepted requests the other figures do not account for (0 when none is lost)."""
    return row["enqueued"] - sum(row[k] for k in (*ENDS, "queued", "running"))


@pytest.fixture
def tokens(transactional_db: None) -> dict[str, str]:
    return {role: api_token_issue(name=role, role=role)[1] for role in ("frontend", "querier")}


@pytest.fixture
async def doors(settings: Any, transactional_db: None) -> AsyncIterator[Any]:
    """The process's runtime host with both doors: websockets and gRPC on a free port."""
    settings.GRPC_PORT = free_port()
    host = await runtime_host.ensure_started()
    assert host.grpc_door is not None
    yield host
    await runtime_host.shutdown(drain_timeout=0)


async def ws_answer(q: WebsocketCommunicator, status: int = 200) -> dict[str, Any]:
    """The websocket querier takes its next request and sends a result for it."""
    request: dict[str, Any] = await q.receive_json_from(timeout=5)
    assert request["type"] == "request"
    await q.send_json_to(
        {"type": "result", "worker": request["worker"], "id": request["id"], "status": status}
    )
    return request


async def ws_enqueued(f: WebsocketCommunicator, rid: str) -> None:
    await f.send_json_to(enqueue(rid, tenant=WS))
    assert (await f.receive_json_from(timeout=5))["type"] == "enqueued"


async def grpc_enqueued(loop: FrontendLoop, query_id: int) -> None:
    request = get_request("/api/v1/query", [("query", "up")])
    assert await loop.enqueue(query_id, GRPC, request) == pb.OK


async def test_every_request_of_both_protocols_is_completed_failed_cancelled_queued_or_running(
    doors: Any, tokens: dict[str, str]
) -> None:
    ends = Ends()
    install_observer(doors.runtime, ends)
    f = await connect("/ws/frontend/", tokens["frontend"])
    address = f"127.0.0.1:{doors.grpc_door.port}"
    cortex = await CortexFrontend(address).start()
    g = await cortex.open_loop()
    queriers = grpc.aio.insecure_channel(address)

    # A websocket querier answers both frontends, one result with an error status.
    q = await querier(tokens["querier"], "oc-ws-querier", workers=1)
    await ws_enqueued(f, "w1")
    await ws_answer(q)
    assert (await f.receive_json_from(timeout=5))["type"] == "result"
    await grpc_enqueued(g, 1)
    await ws_answer(q, status=500)
    assert (await cortex.result(1)).code == 500
    # Cancelled while it ran: the querier's result comes late and is dropped.
    await ws_enqueued(f, "w2")
    running: dict[str, Any] = await q.receive_json_from(timeout=5)
    await f.send_json_to({"type": "cancel", "id": "w2"})
    assert (await f.receive_json_from(timeout=5))["type"] == "cancelled"
    await q.send_json_to(
        {"type": "result", "worker": running["worker"], "id": running["id"], "status": 200}
    )
    await q.disconnect()

    # A Cortex querier answers both: through our bridge and to the Cortex frontend.
    worker = await QuerierWorker(queriers, "oc-cortex-querier").open()
    await ws_enqueued(f, "w3")
    await worker.answer(await worker.next())
    assert (await f.receive_json_from(timeout=5))["type"] == "result"
    await ends.reach("completed", WS, 2)
    await grpc_enqueued(g, 2)
    await worker.answer(await worker.next())
    await cortex.result(2)
    await ends.reach("completed", GRPC, 2)
    # Its frontend cancels one while it runs (the scheduler aborts the worker's stream).
    await grpc_enqueued(g, 3)
    await worker.next()
    assert await g.cancel(3) == pb.OK
    await ends.reach("cancelled", GRPC, 1)
    await worker.close()

    # With no querier waiting: an operator fails two, a frontend cancels one queued.
    await grpc_enqueued(g, 4)
    await grpc_enqueued(g, 5)
    assert len(doors.runtime.fail_matching("cancelled by an operator", tenant=GRPC)) == 2
    for rid in ("w4", "w5", "w6"):
        await ws_enqueued(f, rid)
    await f.send_json_to({"type": "cancel", "id": "w5"})
    assert (await f.receive_json_from(timeout=5))["type"] == "cancelled"
    await grpc_enqueued(g, 6)
    # One of the three left is taken and kept running.
    last = await QuerierWorker(queriers, "oc-last-querier").open()
    await last.next()

    rows = by_tenant(await scrape())
    assert {t: unaccounted(rows[t]) for t in (WS, GRPC)} == {WS: 0.0, GRPC: 0.0}
    assert {t: [rows[t][k] for k in ENDS] for t in (WS, GRPC)} == {
        WS: [2.0, 0.0, 2.0],
        GRPC: [2.0, 2.0, 1.0],
    }
    assert (rows[WS]["enqueued"], rows[GRPC]["enqueued"]) == (6.0, 6.0)
    assert sum(rows[t]["running"] for t in (WS, GRPC)) == 1.0
    assert sum(rows[t]["queued"] for t in (WS, GRPC)) == 2.0
    # Exactly the runtime's own reports of each end.
    assert all(rows[t][how] == ends.seen[how, t] for how in ENDS for t in (WS, GRPC))
    await last.close()
    await queriers.close()
    await g.close()
    await cortex.close()
    await f.disconnect()


async def test_a_result_for_a_request_already_ended_is_not_counted_completed(host: Any) -> None:
    runtime = host.runtime
    worker = runtime.connect_querier("oc-late-q")
    runtime.enqueue(Request(id="oc-late-1", tenant_id="oc-late"))
    request = await runtime.next_request("oc-late-q", worker)
    assert runtime.complete(request.id) is request
    assert runtime.complete(request.id) is None  # the same result again
    runtime.enqueue(Request(id="oc-late-2", tenant_id="oc-late"))
    await runtime.next_request("oc-late-q", worker)
    runtime.cancel("oc-late-2")
    assert runtime.complete("oc-late-2") is None  # its result, after the frontend gave up
    row = by_tenant(await scrape())["oc-late"]
    assert (row["completed"], row["cancelled"], unaccounted(row)) == (1.0, 1.0, 0.0)


async def test_running_requests_are_exported_per_tenant_with_their_ids_escaped(host: Any) -> None:
    runtime = host.runtime
    odd = 'oc-"odd"\\tenant'
    for n, tenant in enumerate((odd, odd, "oc-plain")):
        runtime.enqueue(Request(id=f"oc-run-{n}", tenant_id=tenant))
        await runtime.next_request("oc-run-q", runtime.connect_querier("oc-run-q"))
    runtime.enqueue(Request(id="oc-run-queued", tenant_id="oc-plain"))
    runtime.complete("oc-run-0")
    text = await scrape()
    lines = text.splitlines()
    assert 'queue_inspector_inflight_requests{user="oc-\\"odd\\"\\\\tenant"} 1.0' in lines
    assert 'queue_inspector_completed_requests_total{user="oc-\\"odd\\"\\\\tenant"} 1.0' in lines
    assert 'queue_inspector_inflight_requests{user="oc-plain"} 1.0' in lines
    rows = by_tenant(text)
    assert (rows[odd]["running"], rows["oc-plain"]["queued"]) == (1.0, 1.0)
    assert unaccounted(rows[odd]) == unaccounted(rows["oc-plain"]) == 0.0


async def test_an_idle_tenants_completed_series_goes_with_its_other_series(
    host: Any, janitor_clock: FakeClock
) -> None:
    clock = janitor_clock
    runtime = host.runtime
    worker = runtime.connect_querier("oc-idle-q")
    for tenant in ("oc-idle", "oc-busy"):
        runtime.enqueue(Request(id=f"{tenant}-1", tenant_id=tenant))
        runtime.complete((await runtime.next_request("oc-idle-q", worker)).id)
    runtime.enqueue(Request(id="oc-busy-2", tenant_id="oc-busy"))
    assert {"oc-idle", "oc-busy"} <= set(by_tenant(await scrape()))

    clock.now += 901
    rows = by_tenant(await scrape())
    assert "oc-idle" not in rows
    assert (rows["oc-busy"]["completed"], unaccounted(rows["oc-busy"])) == (1.0, 0.0)
