"""Listing, searching and cancelling queued requests on a real Daphne, real frontends.

Websocket and Cortex gRPC frontends queue work for one tenant; the REST API
lists it (rows naming their frontend and the id the frontend knows), finds it
by search, cancels one (the websocket frontend gets `failed` naming the
operator) and by filter (the gRPC frontend gets its QueryResult with HTTP 500
and the reason), refuses a viewer, and afterwards the REST totals, the queue
snapshot and `/metrics` agree, and a querier takes exactly what is left.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import pytest

from api.wire.grpc.clients import CortexFrontend, QuerierWorker, get_request
from loadgen.daphne_process import DaphneProcess
from loadgen.wsclients import ws_connect
from scheduler_core.pb import schedulerpb_pb2 as pb
from tests.service.test_websocket_service import Frontend

RANGE = "/prometheus/api/v1/query_range"


@pytest.fixture(scope="module")
def daphne_server() -> Iterator[DaphneProcess]:
    """A Daphne of this module's own: a querier here takes any tenant's work, so
    requests other tests leave on the shared server would reach it."""
    with DaphneProcess() as server:
        yield server


@pytest.fixture(scope="module")
def tokens(daphne_server: DaphneProcess) -> dict[str, str]:
    return {
        role: daphne_server.issue_token(role, name=f"qr-{role}")
        for role in ("frontend", "querier", "editor", "viewer")
    }


def rest(
    server: DaphneProcess, token: str, path: str, body: dict[str, Any] | None = None
) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"{server.base_url}/api/v1/{path}",
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="GET" if body is None else "POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


async def call(server: DaphneProcess, token: str, path: str, body: Any = None) -> tuple[int, Any]:
    return await asyncio.to_thread(rest, server, token, path, body)


async def until_total(server: DaphneProcess, token: str, tenant: str, total: int) -> Any:
    """The tenant's listing once it holds `total` rows (10 s at most)."""
    deadline = time.monotonic() + 10
    while True:
        status, page = await call(server, token, f"queue/requests/?tenant={tenant}")
        assert status == 200, page
        if page["total"] == total or time.monotonic() > deadline:
            assert page["total"] == total, page
            return page
        await asyncio.sleep(0.05)


def recent(query: str) -> list[tuple[str, str]]:
    now = time.time()
    return [("query", query), ("start", str(now - 600)), ("end", str(now)), ("step", "30")]


@pytest.fixture
async def ws_frontend(
    daphne_server: DaphneProcess, tokens: dict[str, str]
) -> AsyncIterator[Frontend]:
    ws = await ws_connect(f"{daphne_server.ws_url}/ws/frontend/", tokens["frontend"])
    client = Frontend(ws)
    yield client
    await client.close()


@pytest.fixture
async def grpc_frontend(daphne_server: DaphneProcess) -> AsyncIterator[CortexFrontend]:
    target = f"127.0.0.1:{daphne_server.grpc_port}"
    async with grpc.aio.insecure_channel(target) as channel:
        await asyncio.wait_for(channel.channel_ready(), 20)
    fe = await CortexFrontend(target).start()
    yield fe
    await fe.close()


def metric(text: str, name: str, tenant: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") and f'user="{tenant}"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


async def test_list_search_cancel_one_and_by_filter_with_both_frontends_told(
    daphne_server: DaphneProcess,
    tokens: dict[str, str],
    ws_frontend: Frontend,
    grpc_frontend: CortexFrontend,
) -> None:
    tenant = f"qr-{uuid.uuid4().hex[:8]}"
    for i, query in enumerate(["rate(a_total[1m])", "sum(needle_total)", "up"]):
        reply = await ws_frontend.enqueue(f"w{i}", tenant, query)
        assert reply["type"] == "enqueued", reply
    loop = await grpc_frontend.open_loop()
    for query_id in (71, 72):
        request = get_request(RANGE, recent(f"grpc_only_metric{query_id}"))
        assert await loop.enqueue(query_id, tenant, request) == pb.OK

    editor, viewer = tokens["editor"], tokens["viewer"]
    status, page = await call(daphne_server, viewer, f"queue/requests/?tenant={tenant}")
    assert status == 200 and page["total"] == 5 and page["next"] is None
    by_client = {row["client_id"]: row for row in page["results"]}
    assert set(by_client) == {"w0", "w1", "w2", 71, 72}
    assert by_client["w1"]["frontend"]["transport"] == "websocket"
    assert by_client["w1"]["frontend"]["name"] == "qr-frontend"
    assert by_client[71]["frontend"]["transport"] == "grpc"
    assert by_client[71]["frontend"]["address"] == grpc_frontend.address
    assert by_client[71]["query"] == "grpc_only_metric71"
    assert all(row["state"] == "queued" and row["source"] == "disabled" for row in page["results"])

    status, found = await call(
        daphne_server, viewer, f"queue/requests/?tenant={tenant}&search=NEEDLE"
    )
    assert [row["client_id"] for row in found["results"]] == ["w1"] and found["total"] == 1
    status, paged = await call(daphne_server, viewer, f"queue/requests/?tenant={tenant}&limit=2")
    assert len(paged["results"]) == 2 and paged["next"]
    status, rest_page = await call(
        daphne_server, viewer, f"queue/requests/?tenant={tenant}&limit=2&cursor={paged['next']}"
    )
    seen = [r["id"] for r in paged["results"] + rest_page["results"]]
    assert seen == [r["id"] for r in page["results"]][:4]

    # A viewer may look, not cancel.
    rid = by_client["w1"]["id"]
    assert (await call(daphne_server, viewer, f"queue/requests/{rid}/cancel/", {}))[0] == 403
    assert (await call(daphne_server, viewer, "queue/cancel/", {"tenant": tenant}))[0] == 403

    status, cancelled = await call(
        daphne_server, editor, f"queue/requests/{rid}/cancel/", {"note": "too heavy"}
    )
    assert status == 200 and cancelled["client_id"] == "w1"
    failed = await ws_frontend.outcome()
    assert failed == {
        "type": "failed",
        "id": "w1",
        "error": "cancelled by operator token:qr-editor: too heavy",
    }
    assert (await call(daphne_server, viewer, f"queue/requests/{rid}/"))[0] == 404

    body = {"tenant": tenant, "regex": r"grpc_only_metric\d+", "note": "incident"}
    status, preview = await call(daphne_server, editor, "queue/cancel/", {**body, "dry_run": True})
    assert (status, preview) == (200, {"matched": 2, "cancelled": 0, "as_of": preview["as_of"]})
    status, done = await call(daphne_server, editor, "queue/cancel/", body)
    assert (status, done) == (200, {"matched": 2, "cancelled": 2})
    for query_id in (71, 72):
        result = await grpc_frontend.result(query_id, timeout=10)
        assert (result.code, result.org_id) == (500, tenant)
        assert result.body == b"cancelled by operator token:qr-editor: incident"

    # Everything agrees afterwards: REST, the queue snapshot, /metrics.
    status, after = await call(daphne_server, viewer, f"queue/requests/?tenant={tenant}")
    assert after["total"] == 2
    status, queue = await call(daphne_server, viewer, f"queue/?search={tenant}")
    assert queue["tenants"][0]["length"] == 2
    text = await asyncio.to_thread(
        lambda: urllib.request.urlopen(f"{daphne_server.base_url}/metrics").read().decode()
    )
    assert metric(text, "cortex_query_scheduler_queue_length", tenant) == 2

    # A querier takes exactly what is left, in the order listed.
    remaining = [row["id"] for row in after["results"]]
    async with grpc.aio.insecure_channel(f"127.0.0.1:{daphne_server.grpc_port}") as channel:
        worker = await QuerierWorker(channel, f"qr-querier-{tenant}").open()
        taken = []
        for _ in remaining:
            message = await worker.next(timeout=10)
            taken.append(message)
            await worker.answer(message, body=b"{}")
        await worker.close()
    outcomes = [await ws_frontend.outcome() for _ in remaining]
    assert sorted(o["id"] for o in outcomes) == ["w0", "w2"]
    assert all(o["type"] == "result" for o in outcomes)
    assert [o["id"] for o in outcomes] == [
        re.sub(r"^ws:[^:]+:(\d+)$", lambda m: f"w{int(m.group(1)) - 1}", rid) for rid in remaining
    ]
    # A querier sends its result to the frontend first, then "done" to the
    # scheduler (Cortex's order), so the last row may leave a moment later.
    empty = await until_total(daphne_server, viewer, tenant, 0)
    assert empty["results"] == []
