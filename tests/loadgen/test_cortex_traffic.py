"""The load generator's Cortex side: forwarded requests, a real server, both protocols."""

from __future__ import annotations

import asyncio
import io
import json
import random
import threading
import time
import urllib.request
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import pytest

from loadgen.cortex_traffic import GrpcDemo, GrpcUnavailable, component_of, forwarded_request
from loadgen.daphne_process import DaphneProcess
from loadgen.demo_traffic import ACTOR_HEADER, make_request
from loadgen.management.commands.loadgen import Command
from loadgen.wsclients import ws_connect
from scheduler_core.cortex_http import parse_forwarded_request

DEADLINE = 20.0


def parsed(msg: dict[str, Any], seed: int) -> Any:
    http = forwarded_request(msg, random.Random(seed))
    headers = [(h.key, list(h.values)) for h in http.headers]
    return http, parse_forwarded_request(http.method, http.url, headers, http.body, now=0.0)


def test_every_demo_request_reaches_the_scheduler_with_its_range_step_and_headers() -> None:
    rng = random.Random(7)
    methods = set()
    for n in range(200):
        msg = make_request(rng, n)
        http, seen = parsed(msg, n)
        methods.add(http.method)
        assert http.url.split("?")[0] == f"/prometheus/api/v1/{msg['api_type']}"
        assert (seen.api_type, seen.query) == (msg["api_type"], msg["query"])
        assert (seen.start, seen.end, seen.step) == (msg["start"], msg["end"], msg["step"])
        actor = msg["headers"].get(ACTOR_HEADER)
        assert seen.headers == {k: v for k, v in msg["headers"].items() if k != ACTOR_HEADER}
        forwarded = [list(h.values) for h in http.headers if h.key == ACTOR_HEADER]
        assert forwarded == ([[actor]] if actor else [])
    assert methods == {"GET", "POST"}


def test_the_cortex_querier_reads_an_old_range_as_store_gateway_work() -> None:
    now = time.time()
    old = {
        "api_type": "query_range",
        "query": "up",
        "start": now - 3 * 86400,
        "end": now - 2 * 86400,
        "step": 60,
        "headers": {},
    }
    recent = {**old, "start": now - 600, "end": now}

    assert component_of(forwarded_request(old, random.Random(1))) == "store-gateway"
    assert component_of(forwarded_request(recent, random.Random(1))) == "ingester"


async def test_a_server_without_grpc_is_reported_and_leaves_the_websocket_side_alone() -> None:
    with pytest.raises(GrpcUnavailable, match="GRPC_PORT=0"):
        await GrpcDemo(["127.0.0.1:0"], lambda _: 0.0).start()

    command = Command(stdout=io.StringIO(), stderr=io.StringIO())
    demo = await command._start_grpc({"grpc": ["127.0.0.1:0"], "workers": 4, "seed": 1}, None)

    assert demo is None
    assert "GRPC_PORT=0" in command.grpc_off
    assert "websocket clients send every request" in command.stderr._out.getvalue()


def queriers_state(server: DaphneProcess, token: str) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{server.base_url}/api/v1/queriers/", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


async def until(check: Callable[[], Any], what: str) -> Any:
    """Poll (in a thread: checks may do HTTP) until `check` is truthy; a real server
    in another process has no fake clock to advance."""
    deadline = time.monotonic() + DEADLINE
    while not (value := await asyncio.to_thread(check)):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)
    return value


@pytest.fixture
async def address(daphne_server: DaphneProcess) -> AsyncIterator[str]:
    target = f"127.0.0.1:{daphne_server.grpc_port}"
    async with grpc.aio.insecure_channel(target) as channel:
        await asyncio.wait_for(channel.channel_ready(), DEADLINE)
    yield target


async def test_the_cortex_clients_run_the_demo_mix_and_are_listed_while_they_run(
    daphne_server: DaphneProcess, address: str
) -> None:
    viewer = daphne_server.issue_token("viewer", "loadgen-grpc-viewer")
    components: list[str] = []
    demo = await GrpcDemo(
        [address], lambda c: components.append(c) or 0.01, querier_id="cortex-querier-t"
    ).start()
    rng = random.Random(3)
    for n in range(40):
        assert demo.submit(make_request(rng, n))

    await until(lambda: demo.counts["results"] == 40, "40 results over QueryResult")

    def listed() -> dict[str, Any] | None:
        state = queriers_state(daphne_server, viewer)
        ids = {q["querier_id"] for q in state["queriers"] if q["connected"]}
        return state if "cortex-querier-t" in ids else None

    state = await until(listed, "the cortex querier in /api/v1/queriers/")
    grpc_rows = [row for row in state["frontends"] if row["transport"] == "grpc"]
    assert [row["address"] for row in grpc_rows] == [demo._frontend.address]  # type: ignore[union-attr]
    assert grpc_rows[0]["streams"] == 2
    assert demo.counts["answered"] == 40
    assert {"ingester", "store-gateway"} <= set(components)
    assert demo.status().startswith("grpc: sent 40 results 40 rejected 0 failed 0 errors 0")

    await demo.close()

    def gone() -> bool:
        s = queriers_state(daphne_server, viewer)
        mine = [q for q in s["queriers"] if q["querier_id"] == "cortex-querier-t"]
        return not any(r["transport"] == "grpc" for r in s["frontends"]) and not any(
            q["connected"] for q in mine
        )

    await until(gone, "the gRPC frontend and querier to leave")
    assert not demo.running and not demo.submit(make_request(rng, 99))


async def test_a_websocket_frontends_request_runs_on_the_cortex_querier(
    daphne_server: DaphneProcess, address: str
) -> None:
    token = daphne_server.issue_token("frontend", "loadgen-grpc-ws")
    demo = await GrpcDemo([address], lambda _: 0.0, querier_id="cortex-querier-w").start()
    ws = await ws_connect(f"{daphne_server.ws_url}/ws/frontend/", token)
    try:
        msg = make_request(random.Random(5), 1)
        await ws.send(json.dumps({**msg, "tenant": "loadgen-grpc-bridge"}))
        replies = [json.loads(await asyncio.wait_for(ws.recv(), DEADLINE)) for _ in range(2)]
        # The querier counts its answer once its QueryResult call and "done"
        # have returned, which may be after the frontend already has the result.
        await until(lambda: demo.counts["answered"], "the querier to count its answer")
    finally:
        await ws.close()
        await demo.close()

    assert [reply["type"] for reply in replies] == ["enqueued", "result"]
    assert replies[1]["status"] == 200
    assert replies[1]["querier"] == "cortex-querier-w"
    assert replies[1]["body"]["status"] == "success"
    assert demo.counts["answered"] == 1


async def test_queries_on_a_replica_killed_under_them_are_counted_lost_within_the_grace(
    daphne_server: DaphneProcess, address: str
) -> None:
    # Slow answers until the kill, so queries are still waiting on the doomed
    # replica when it dies; instant after it, so the live replica's backlog
    # clears at once and the wait is the grace, not one worker's queue.
    killed = threading.Event()
    with DaphneProcess() as doomed:
        demo = await GrpcDemo(
            [address, f"127.0.0.1:{doomed.grpc_port}"],
            lambda _: 0.0 if killed.is_set() else 0.2,
            querier_id="cortex-querier-k",
            workers=1,
            loops=1,
            orphan_grace=1.0,
        ).start()
        try:
            rng = random.Random(5)
            for n in range(40):
                demo.submit(make_request(rng, n))
            await until(lambda: demo._queue.qsize() == 0, "every query sent")
            assert doomed.proc is not None
            doomed.proc.kill()  # as kill -9: its queue is gone, no result will come
            killed.set()
            for n in range(40, 50):  # the next enqueue on its loop finds it gone
                demo.submit(make_request(rng, n))

            await until(lambda: demo.outstanding == 0, "every query answered or counted lost")
            c = demo.counts
            assert c["lost"] > 0, demo.status()
            # Each query sent counted once; the dead replica's streams, retried
            # all along, are problems said on the line, not errors counted.
            ends = sum(c[k] for k in ("results", "failed", "rejected", "errors", "lost"))
            assert c["timed_out"] == 0  # every loop to the live replica held
            assert ends == c["sent"], demo.status()
            assert f"lost {c['lost']};" in demo.status()
        finally:
            await demo.close()


def queued_requests(server: DaphneProcess, token: str, tenant: str) -> int:
    request = urllib.request.Request(
        f"{server.base_url}/api/v1/queue/requests/?tenant={tenant}",
        headers={"Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return int(json.loads(response.read())["total"])


async def test_queries_still_held_at_the_result_timeout_are_counted_timed_out_and_cancelled(
    daphne_server: DaphneProcess, address: str
) -> None:
    viewer = daphne_server.issue_token("viewer", "loadgen-grpc-timeout")
    # One worker, each answer slow: one query runs, the rest wait in the
    # queue past the timeout, all on a loop that never breaks.
    demo = await GrpcDemo(
        [address],
        lambda _: 60.0,
        querier_id="cortex-querier-slow",
        workers=1,
        loops=1,
        result_timeout=0.5,
    ).start()
    try:
        rng = random.Random(9)
        for n in range(5):
            demo.submit({**make_request(rng, n), "tenant": "loadgen-timeout"})
        await until(
            lambda: queued_requests(daphne_server, viewer, "loadgen-timeout") == 5, "5 held"
        )

        await until(lambda: demo.outstanding == 0, "every query given up")
        await until(
            lambda: queued_requests(daphne_server, viewer, "loadgen-timeout") == 0,
            "the scheduler to hold none of them",
        )

        c = demo.counts
        assert (c["sent"], c["timed_out"], c["lost"], c["results"]) == (5, 5, 0, 0)
        assert "errors 0 timed out 5 lost 0;" in demo.status()
    finally:
        await demo.close()


async def test_queries_a_draining_replica_answers_shutting_down_go_to_another_and_complete(
    daphne_server: DaphneProcess, address: str
) -> None:
    with DaphneProcess(extra_env={"SHUTDOWN_DRAIN_TIMEOUT": "30"}) as draining:
        # A websocket request held by a querier that never answers keeps the
        # replica draining (answering SHUTTING_DOWN) for the whole test.
        token = draining.issue_token("editor", "loadgen-grpc-drain")
        silent = await ws_connect(f"{draining.ws_url}/ws/querier/", token)
        frontend = await ws_connect(f"{draining.ws_url}/ws/frontend/", token)
        demo = GrpcDemo(
            [address, f"127.0.0.1:{draining.grpc_port}"],
            lambda _: 0.0,
            querier_id="cortex-querier-d",
            workers=1,
        )
        try:
            await silent.send(json.dumps({"type": "hello", "querier_id": "silent", "workers": 1}))
            await frontend.send(json.dumps({**make_request(random.Random(9), 1), "tenant": "t"}))
            for _ in range(2):  # welcome, then the request
                assert json.loads(await asyncio.wait_for(silent.recv(), DEADLINE))["type"]
            await demo.start()
            assert draining.proc is not None
            draining.proc.terminate()
            await until(lambda: "draining the queue" in draining.log(), "the drain to start")

            rng = random.Random(11)
            for n in range(30):
                demo.submit(make_request(rng, n))
            await until(lambda: demo.outstanding == 0, "every query answered")
        finally:
            await demo.close()
            await silent.close()
            await frontend.close()

    assert demo.counts["sent"] == demo.counts["results"] == 30, demo.status()
    assert demo.counts["errors"] == 0
