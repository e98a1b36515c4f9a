"""Faults against a real Daphne: hostile frames on every websocket, SIGTERM with work running.

Hostile frames (deep nesting, numbers no float holds, wrong types, binary,
oversized) go to the frontend, querier and inspector endpoints of the
session's server: each gets an `error`, the socket stays usable, and once
the sockets close the queue and the querier list are exactly as before.
SIGTERM runs on a server of its own, with requests queued and running on
both protocols (websocket and Cortex gRPC frontends and queriers, each
protocol's requests running on the other's queriers too): every request is
failed back exactly once with "scheduler shutting down", and the websockets
close with a close frame (1000) rather than dropping.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.cookiejar
import json
import re
import signal
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
import websockets

from api.wire.grpc.clients import CortexFrontend, QuerierWorker, get_request
from loadgen.daphne_process import DaphneProcess
from loadgen.wsclients import ws_connect

NOW = time.time()
SHUTTING_DOWN = "scheduler shutting down"

HOSTILE_MACHINE_FRAMES = [
    "[" * 5_000 + "]" * 5_000,  # 10 kB of nesting: a RecursionError once
    '{"type":"enqueue","id":"deep","tenant":"t","headers":' + '{"a":' * 2_000 + "1" + "}" * 2_001,
    '{"type":"enqueue","id":"big","tenant":"t","start":' + "9" * 400 + "}",
    '{"type":"enqueue","id":"big-step","tenant":"t","step":' + "9" * 400 + "}",
    '{"type":"enqueue","id":"far","tenant":"t","start":-1e308,"end":0}',
    '{"type":"enqueue","id":"inf","tenant":"t","end":1e999}',
    '{"type":"enqueue","id":"step","tenant":"t","step":1e300}',
    '{"type":"enqueue","id":"long","tenant":"' + "t" * 151 + '"}',
    '{"type":{"a":1}}',
    '{"type":"enqueue","id":{"a":1},"tenant":"t"}',
    '{"type":"enqueue","id":"x","tenant":"t","component":[1]}',
    '{"type":"hello","querier_id":"q","workers":' + "9" * 400 + "}",
    '{"type":"result","worker":' + "9" * 400 + ',"id":"x","status":200}',
    "[1,2,3]",
    "not json at all",
    "{" * 200_000,
    "x" * 1_000_500,  # over the protocol's 1,000,000-character limit, within Daphne's 1 MiB
]
HOSTILE_INSPECTOR_FRAMES = [
    "[" * 5_000 + "]" * 5_000,
    '{"type":"subscribe","search":' + "[" * 3_000 + "]" * 3_000 + "}",
    '{"type":"subscribe","page":' + "9" * 400 + "}",
    '{"type":"subscribe","projection":["x"]}',
    '{"type":"subscribe","expanded":{"a":1}}',
    '{"type":["subscribe"]}',
    "[]",
    "{" * 200_000,
]


def api_get(server: DaphneProcess, token: str, path: str) -> Any:
    request = urllib.request.Request(
        f"{server.base_url}{path}", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def api_post(server: DaphneProcess, token: str, path: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        f"{server.base_url}{path}",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def scheduler_state(server: DaphneProcess, token: str) -> tuple[Any, ...]:
    """What must not change: the queue by tenant, the connected queriers, the frontends."""
    queue = api_get(server, token, "/api/v1/queue/?limit=500")
    queriers = api_get(server, token, "/api/v1/queriers/?limit=500")
    return (
        queue["total"],
        sorted((t["tenant_id"], t["length"]) for t in queue["tenants"]),
        sorted(
            (q["querier_id"], q["busy_workers"]) for q in queriers["queriers"] if q["connected"]
        ),
        len(queriers["frontends"]),
    )


async def settled_to(server: DaphneProcess, token: str, expected: tuple[Any, ...]) -> None:
    """Poll until the state is back (a closed socket's cleanup runs on its disconnect)."""
    deadline = time.monotonic() + 15
    while (state := await asyncio.to_thread(scheduler_state, server, token)) != expected:
        assert time.monotonic() < deadline, f"state {state} never returned to {expected}"
        await asyncio.sleep(0.1)


def session_cookie(server: DaphneProcess, username: str, password: str) -> str:
    """Log in through the real login form; the Cookie header of the session."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(f"{server.base_url}/login/", timeout=10).read().decode()
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert match is not None, "no CSRF token on the login page"
    form = {"username": username, "password": password, "csrfmiddlewaretoken": match.group(1)}
    opener.open(
        urllib.request.Request(
            f"{server.base_url}/login/",
            data=urllib.parse.urlencode(form).encode(),
            headers={"Referer": f"{server.base_url}/login/"},
        ),
        timeout=10,
    ).read()
    cookies = {c.name: c.value for c in jar}
    assert "sessionid" in cookies, "login failed"
    return "; ".join(f"{name}={value}" for name, value in cookies.items())


async def reply(ws: Any, timeout: float = 10.0) -> dict[str, Any]:
    return json.loads(await asyncio.wait_for(ws.recv(), timeout))


@pytest.fixture(scope="module")
def tokens(daphne_server: DaphneProcess) -> dict[str, str]:
    roles = ("frontend", "querier", "viewer")
    return dict(zip(roles, daphne_server.issue_tokens(*roles), strict=True))


def new_log(server: DaphneProcess, since: int) -> str:
    return server.log_path.read_text(errors="replace")[since:]


@pytest.mark.parametrize("endpoint", ["frontend", "querier"])
async def test_hostile_frames_on_a_machine_socket_change_nothing(
    daphne_server: DaphneProcess, tokens: dict[str, str], endpoint: str
) -> None:
    before = await asyncio.to_thread(scheduler_state, daphne_server, tokens["viewer"])
    log_start = len(daphne_server.log_path.read_text(errors="replace"))
    ws = await ws_connect(f"{daphne_server.ws_url}/ws/{endpoint}/", tokens[endpoint])
    if endpoint == "querier":
        await ws.send(json.dumps({"type": "hello", "querier_id": "fault-q", "workers": 4}))
        assert (await reply(ws))["type"] == "welcome"
    for frame in HOSTILE_MACHINE_FRAMES:
        await ws.send(frame)
        answer = await reply(ws)
        assert (answer["type"], answer["status"]) == ("error", 400), (frame[:50], answer)
    await ws.send(b"\x00binary")
    assert (await reply(ws))["status"] == 400
    # Still usable: a real message after all that is served normally.
    if endpoint == "frontend":
        await ws.send(json.dumps({"type": "enqueue", "id": "ok", "tenant": "fault-t"}))
        assert (await reply(ws))["type"] == "enqueued"
    else:
        await ws.send(json.dumps({"type": "shutdown"}))
    await ws.close()
    await settled_to(daphne_server, tokens["viewer"], before)
    assert "Exception inside application" not in new_log(daphne_server, log_start)


async def test_a_query_nested_past_the_parsers_depth_is_queued_and_the_server_lives(
    daphne_server: DaphneProcess, tokens: dict[str, str]
) -> None:
    """24 KB of `+up`: parsing it crashed the process (SIGSEGV); now it is unclassified."""
    ws = await ws_connect(f"{daphne_server.ws_url}/ws/frontend/", tokens["frontend"])
    chain = "up" + "+up" * 8000
    enqueue = {"type": "enqueue", "id": "deep", "tenant": "fault-deep", "query": chain}
    await ws.send(json.dumps(enqueue))
    answer = await reply(ws)
    assert (answer["type"], answer["component"]) == ("enqueued", "unknown"), answer
    body = {"tenant": "t", "query": chain}
    explained = await asyncio.to_thread(
        api_post, daphne_server, tokens["viewer"], "/api/v1/explain/", body
    )
    assert explained["component"] == "unknown"
    await ws.close()
    assert daphne_server.proc is not None and daphne_server.proc.poll() is None


async def test_hostile_frames_on_the_inspector_socket_change_nothing(
    daphne_server: DaphneProcess, tokens: dict[str, str]
) -> None:
    await asyncio.to_thread(daphne_server.create_user, "fault-viewer", "pw-fault-123", "viewer")
    cookie = await asyncio.to_thread(session_cookie, daphne_server, "fault-viewer", "pw-fault-123")
    before = await asyncio.to_thread(scheduler_state, daphne_server, tokens["viewer"])
    log_start = len(daphne_server.log_path.read_text(errors="replace"))
    ws = await websockets.connect(
        f"{daphne_server.ws_url}/ws/inspector/",
        additional_headers={"Cookie": cookie, "Origin": daphne_server.base_url},
        max_size=2**24,
        ping_interval=None,
    )
    for frame in HOSTILE_INSPECTOR_FRAMES:
        await ws.send(frame)
        answer = await reply(ws)
        assert answer["type"] == "error", (frame[:50], answer)
    # An ack of any sequence number is taken silently, as acks are.
    await ws.send('{"type":"ack","seq":' + "9" * 400 + "}")
    await ws.send(json.dumps({"type": "subscribe"}))
    assert (await reply(ws))["type"] == "snapshot"  # still usable
    await ws.close()
    await settled_to(daphne_server, tokens["viewer"], before)
    assert "Exception inside application" not in new_log(daphne_server, log_start)


async def test_a_frame_over_daphnes_limit_ends_the_connection_and_leaves_no_ghost(
    daphne_server: DaphneProcess, tokens: dict[str, str]
) -> None:
    """Daphne's transport refuses frames over 1 MiB before the application sees them
    (autobahn drops the TCP connection); the disconnect cleanup still runs."""
    before = await asyncio.to_thread(scheduler_state, daphne_server, tokens["viewer"])
    ws = await ws_connect(f"{daphne_server.ws_url}/ws/frontend/", tokens["frontend"])
    for n in range(3):
        await ws.send(json.dumps({"type": "enqueue", "id": n, "tenant": "fault-huge"}))
        assert (await reply(ws))["type"] == "enqueued"
    await ws.send("x" * (2**20 + 1))
    with pytest.raises(websockets.ConnectionClosed):
        await reply(ws)
    await settled_to(daphne_server, tokens["viewer"], before)  # its 3 requests cancelled


@pytest.mark.parametrize(
    "path", ["/static/%2e%2e/config/settings.py", "/static/..%2fconfig/settings.py", "/static/%00"]
)
def test_a_static_path_escaping_the_static_root_is_a_404(
    daphne_server: DaphneProcess, path: str
) -> None:
    with pytest.raises(urllib.error.HTTPError) as answer:
        urllib.request.urlopen(f"{daphne_server.base_url}{path}", timeout=10)
    assert answer.value.code == 404


# -- SIGTERM with work queued and running on both protocols -------------------


@pytest.fixture
async def doomed_server() -> AsyncIterator[DaphneProcess]:
    """A server of its own: this test ends it with SIGTERM."""
    server = DaphneProcess(extra_env={"SHUTDOWN_DRAIN_TIMEOUT": "1"})
    await asyncio.to_thread(server.start)
    try:
        yield server
    finally:
        await asyncio.to_thread(server.cleanup)


async def frames_until_closed(ws: Any) -> tuple[list[dict[str, Any]], int | None]:
    """Every frame until the server closes the socket, and the close code it sent."""
    frames: list[dict[str, Any]] = []
    with contextlib.suppress(websockets.ConnectionClosed):
        while True:
            frames.append(json.loads(await asyncio.wait_for(ws.recv(), 30)))
    received = ws.protocol.close_rcvd  # None: the TCP connection dropped, no close frame
    return frames, None if received is None else received.code


def range_request(query: str) -> Any:
    params = [("query", query), ("start", str(NOW - 600)), ("end", str(NOW)), ("step", "15")]
    return get_request("/prometheus/api/v1/query_range", params)


async def test_sigterm_fails_every_queued_and_running_request_back_exactly_once(
    doomed_server: DaphneProcess,
) -> None:
    server = doomed_server
    frontend_token = await asyncio.to_thread(server.issue_token, "frontend")
    querier_token = await asyncio.to_thread(server.issue_token, "querier")
    address = f"127.0.0.1:{server.grpc_port}"
    async with grpc.aio.insecure_channel(address) as probe:
        await asyncio.wait_for(probe.channel_ready(), 20)

    # Queriers that take work and never answer: 4 websocket workers, 2 gRPC ones.
    ws_querier = await ws_connect(f"{server.ws_url}/ws/querier/", querier_token)
    await ws_querier.send(json.dumps({"type": "hello", "querier_id": "doomed-ws", "workers": 4}))
    assert (await reply(ws_querier))["type"] == "welcome"
    channel = grpc.aio.insecure_channel(address)
    grpc_workers = [await QuerierWorker(channel, "doomed-grpc").open() for _ in range(2)]

    # Frontends on both protocols: 10 requests each, 6 of the 20 start running.
    ws_frontend = await ws_connect(f"{server.ws_url}/ws/frontend/", frontend_token)
    cortex = await CortexFrontend(address).start()
    grpc_results: list[Any] = []
    cortex.on_result = grpc_results.append
    loop = await cortex.open_loop()
    ws_ids = [f"ws-{n}" for n in range(10)]
    for n, rid in enumerate(ws_ids):
        message = {"type": "enqueue", "id": rid, "tenant": "doomed-ws-t", "query": f"up{n}"}
        await ws_frontend.send(json.dumps(message | {"start": NOW - 600, "end": NOW, "step": 15}))
        assert (await reply(ws_frontend))["type"] == "enqueued"
    grpc_ids = list(range(1, 11))
    for query_id in grpc_ids:
        assert await loop.enqueue(query_id, "doomed-grpc-t", range_request("up")) == 0  # OK

    running = [await reply(ws_querier) for _ in range(4)]
    running += [await worker.next(timeout=10) for worker in grpc_workers]
    assert [m["type"] for m in running[:4]] == ["request"] * 4

    ws_querier_frames = asyncio.create_task(frames_until_closed(ws_querier))
    ws_frontend_frames = asyncio.create_task(frames_until_closed(ws_frontend))
    assert server.proc is not None
    server.proc.send_signal(signal.SIGTERM)

    frames, code = await ws_frontend_frames
    assert code == 1000, f"the frontend socket dropped without a close frame ({code})"
    assert Counter(f["id"] for f in frames) == Counter(ws_ids)  # each exactly once
    assert {(f["type"], f["error"]) for f in frames} == {("failed", SHUTTING_DOWN)}
    _, querier_code = await ws_querier_frames
    assert querier_code == 1000
    assert await asyncio.to_thread(server.proc.wait, 30) is not None

    assert Counter(r.query_id for r in grpc_results) == Counter(grpc_ids)  # each exactly once
    assert {(r.code, r.body.decode()) for r in grpc_results} == {(500, SHUTTING_DOWN)}
    for worker in grpc_workers:
        await worker.close()
    await channel.close()
    await cortex.close()
