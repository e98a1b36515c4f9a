"""Scale-out: two real Daphne replicas on one PostgreSQL database and one Redis.

Each replica is a separate process with its own queue (as Mimir runs
several schedulers). Config reconcile is set to 300 s, so only the Redis
channel layer can carry a config change between them in these tests; a
third replica without Redis shows that the reconcile-by-version loop alone
still catches up when the layer's message is lost. The servers, database and
Redis prefix come from `tests.service.replica_pair` (without
TEST_DATABASE_URL and TEST_REDIS_URL the tests fail, saying so).
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
import websockets

from api.wire.grpc.clients import CortexFrontend
from loadgen.daphne_process import DaphneProcess
from loadgen.spread_frontend import SpreadFrontend
from loadgen.wsclients import queriers_everywhere, ws_connect
from tests.service.replica_pair import replica, require_servers, scale_out_env, started_pair

NOW = time.time()


@pytest.fixture(scope="module")
def shared_env() -> Iterator[dict[str, str]]:
    with scale_out_env() as env:
        yield env


@pytest.fixture(scope="module")
def redis_url(shared_env: dict[str, str]) -> str:
    return require_servers()[1]


@pytest.fixture(scope="module")
def replicas(shared_env: dict[str, str]) -> Iterator[tuple[DaphneProcess, DaphneProcess]]:
    with started_pair(shared_env, GROUP_REJOIN_SECONDS="1") as pair:
        yield pair


@pytest.fixture(scope="module")
def tokens(replicas: tuple[DaphneProcess, DaphneProcess]) -> dict[str, str]:
    a, _ = replicas
    roles = ("editor", "frontend", "querier")
    return dict(zip(roles, a.issue_tokens(*roles), strict=True))


def rest(server: DaphneProcess, token: str, method: str, path: str, body: Any = None) -> Any:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"{server.base_url}{path}", data=data, headers=headers, method=method
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def create_tenant(server: DaphneProcess, token: str, tenant: str, config: dict[str, Any]) -> None:
    """Create a tenant through the REST API of `server`, as an editor would."""
    rest(server, token, "PUT", f"/api/v1/tenants/{tenant}/", config)


class Frontend:
    """A frontend socket with no querier behind it: every reply is immediate."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws

    @classmethod
    async def open(cls, server: DaphneProcess, token: str) -> Frontend:
        return cls(await ws_connect(f"{server.ws_url}/ws/frontend/", token))

    async def enqueue(self, rid: str, tenant: str) -> dict[str, Any]:
        msg = {"type": "enqueue", "id": rid, "tenant": tenant, "query": "up"}
        await self.ws.send(json.dumps(msg | {"start": NOW - 600, "end": NOW, "step": 15}))
        return dict(json.loads(await asyncio.wait_for(self.ws.recv(), 10)))

    async def cancel(self, rid: str) -> None:
        await self.ws.send(json.dumps({"type": "cancel", "id": rid}))
        assert json.loads(await asyncio.wait_for(self.ws.recv(), 10))["type"] == "cancelled"

    async def priority(self, tenant: str, probe: str) -> int | None:
        """The priority a new request of `tenant` gets now (the probe is cancelled)."""
        reply = await self.enqueue(probe, tenant)
        if reply["type"] != "enqueued":
            return None
        await self.cancel(probe)
        return int(reply["priority"])


async def seconds_until_priority(frontend: Frontend, tenant: str, want: int, limit: float) -> float:
    started = time.monotonic()
    n = 0
    while (got := await frontend.priority(tenant, f"probe-{tenant}-{n}")) != want:
        n += 1
        assert time.monotonic() - started < limit, f"{tenant}: priority {got}, never {want}"
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def test_a_tenant_change_on_one_replica_reaches_the_other_over_the_channel_layer(
    replicas: tuple[DaphneProcess, DaphneProcess], tokens: dict[str, str]
) -> None:
    a, b = replicas
    on_b = await Frontend.open(b, tokens["frontend"])
    try:
        assert await on_b.priority("scale-prio", "before") == 0  # unknown tenant: no rules
        create_tenant(
            a,
            tokens["editor"],
            "scale-prio",
            {"query_priority": {"enabled": True, "default_priority": 4}},
        )
        # Reconcile runs every 300 s here: only the layer's message can be this fast.
        # Ten seconds, not 2.5: each probe is two round trips, slow on a busy
        # machine, and ten is still thirty times shorter than a reconcile.
        assert await seconds_until_priority(on_b, "scale-prio", 4, limit=10.0) < 10.0
    finally:
        await on_b.ws.close()


async def test_replicas_join_their_groups_again_after_redis_forgot_them(
    replicas: tuple[DaphneProcess, DaphneProcess],
    tokens: dict[str, str],
    shared_env: dict[str, str],
    redis_url: str,
) -> None:
    """As after a Redis restarted empty: joined once at start, they stayed out for good."""
    import redis

    a, b = replicas
    client = redis.Redis.from_url(redis_url)
    groups = [
        f"{shared_env['CHANNEL_PREFIX']}:group:{g}" for g in ("scheduler-config", "scheduler-queue")
    ]
    try:
        assert [client.zcard(key) for key in groups] == [2, 2]
        client.delete(*groups)
        deadline = time.monotonic() + 5.0
        while [client.zcard(key) for key in groups] != [2, 2]:
            assert time.monotonic() < deadline, "the replicas did not join their groups again"
            await asyncio.sleep(0.1)
    finally:
        client.close()
    on_b = await Frontend.open(b, tokens["frontend"])
    try:
        create_tenant(
            a,
            tokens["editor"],
            "scale-rejoined",
            {"query_priority": {"enabled": True, "default_priority": 5}},
        )
        # Reconcile runs every 300 s here: only the group's message can be this fast
        # (ten seconds, as above: a busy machine's round trips).
        await seconds_until_priority(on_b, "scale-rejoined", 5, limit=10.0)
    finally:
        await on_b.ws.close()


async def test_a_replica_that_misses_the_message_catches_up_by_reconciling(
    replicas: tuple[DaphneProcess, DaphneProcess],
    tokens: dict[str, str],
    shared_env: dict[str, str],
) -> None:
    a, _ = replicas
    # No Redis: its in-memory layer never hears replica A; only reconcile can help.
    deaf = replica(shared_env, "replica-deaf", REDIS_URL="", CONFIG_RECONCILE_SECONDS="1")
    try:
        deaf.start()
        on_deaf = await Frontend.open(deaf, tokens["frontend"])
        assert await on_deaf.priority("scale-lost", "before") == 0
        create_tenant(
            a,
            tokens["editor"],
            "scale-lost",
            {"query_priority": {"enabled": True, "default_priority": 6}},
        )
        await seconds_until_priority(on_deaf, "scale-lost", 6, limit=5.0)
        await on_deaf.ws.close()
    finally:
        deaf.cleanup()


async def test_a_request_refused_with_429_by_one_replica_is_accepted_by_the_other(
    replicas: tuple[DaphneProcess, DaphneProcess], tokens: dict[str, str]
) -> None:
    a, b = replicas
    tenant = "scale-limit"
    config = {
        "max_outstanding_requests_per_tenant": 1,
        "query_priority": {"enabled": True, "default_priority": 3},
    }
    create_tenant(a, tokens["editor"], tenant, config)
    for server in (a, b):
        probe = await Frontend.open(server, tokens["frontend"])
        await seconds_until_priority(probe, tenant, 3, limit=5.0)
        await probe.ws.close()
    replies: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    urls = [f"{a.ws_url}/ws/frontend/", f"{b.ws_url}/ws/frontend/"]
    frontend = SpreadFrontend(urls, tokens["frontend"], replies.put_nowait, home=0)
    await frontend.start()
    queriers = queriers_everywhere(
        [f"{a.ws_url}/ws/querier/", f"{b.ws_url}/ws/querier/"], tokens["querier"], "scale-q"
    )
    try:
        for rid in ("s1", "s2", "s3"):
            msg = {"type": "enqueue", "id": rid, "tenant": tenant, "query": "up"}
            await frontend.send(msg | {"start": NOW - 600, "end": NOW, "step": 15})
            got = await asyncio.wait_for(replies.get(), 10)
            assert got["id"] == rid
            # s1 fits on A; s2 is refused by A and taken by B; s3 is refused by both.
            assert got["type"] == ("rejected" if rid == "s3" else "enqueued"), got
        assert frontend.retried == 2
        await asyncio.gather(*(q.start() for q in queriers))
        results = [await asyncio.wait_for(replies.get(), 10) for _ in range(2)]
        assert sorted(r["id"] for r in results) == ["s1", "s2"]
        assert {r["type"] for r in results} == {"result"}
        assert sorted(q.served for q in queriers) == [1, 1]  # one from each replica
    finally:
        await asyncio.gather(*(q.close() for q in queriers))
        await frontend.close()


async def poll(check: Any, limit: float = 5.0) -> Any:
    deadline = time.monotonic() + limit
    while True:
        value = check()
        if value is not None:
            return value
        assert time.monotonic() < deadline, "the merged view never showed it"
        await asyncio.sleep(0.1)


async def test_each_replica_shows_the_queue_and_queriers_of_every_replica(
    replicas: tuple[DaphneProcess, DaphneProcess], tokens: dict[str, str]
) -> None:
    a, b = replicas
    on_b = await Frontend.open(b, tokens["frontend"])
    (querier,) = queriers_everywhere([f"{a.ws_url}/ws/querier/"], tokens["querier"], "scale-mq")
    try:
        assert (await on_b.enqueue("merged", "scale-merged"))["type"] == "enqueued"
        await querier.start()  # on A only: B's request stays queued

        def queued_on_a() -> dict[str, Any] | None:
            body = rest(a, tokens["editor"], "GET", "/api/v1/queue/?search=scale-merged")
            rows = {row["tenant_id"]: row["length"] for row in body["tenants"]}
            return body if rows.get("scale-merged") == 1 else None

        body = await poll(queued_on_a)
        assert body["replicas"]["count"] == 2
        assert body["replicas"]["ids"] == ["replica-a", "replica-b"]

        def querier_seen_by_b() -> list[tuple[str, str]] | None:
            body = rest(b, tokens["editor"], "GET", "/api/v1/queriers/?search=scale-mq")
            rows = [(q["querier_id"], q.get("replica", "")) for q in body["queriers"]]
            return rows or None

        assert await poll(querier_seen_by_b) == [("scale-mq", "replica-a")]
        await on_b.cancel("merged")
    finally:
        await querier.close()
        await on_b.ws.close()


class Browser:
    """A logged-in session on one replica's pages, as a person's browser would hold."""

    def __init__(self, server: DaphneProcess, username: str, password: str) -> None:
        self.base = server.base_url
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        form = self.get("/login/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
        assert csrf is not None, "the login page has no CSRF token"
        body = urlencode(
            {"username": username, "password": password, "csrfmiddlewaretoken": csrf[1]}
        )
        with self.opener.open(f"{self.base}/login/", body.encode(), timeout=10) as response:
            assert "/login/" not in response.url, "the login was refused"

    def get(self, path: str) -> str:
        with self.opener.open(f"{self.base}{path}", timeout=10) as response:
            return str(response.read().decode())

    async def inspector(self) -> Any:
        """The inspector's live socket, opened with this session as the page opens it."""
        cookie = "; ".join(f"{c.name}={c.value}" for c in self.jar)
        return await websockets.connect(
            f"{self.base.replace('http', 'ws', 1)}/ws/inspector/",
            additional_headers={"Cookie": cookie, "Origin": self.base},
            max_size=2**24,
            ping_interval=None,
        )


async def test_the_inspector_lists_the_frontends_of_every_replica_each_with_its_replica(
    replicas: tuple[DaphneProcess, DaphneProcess], tokens: dict[str, str]
) -> None:
    a, b = replicas
    await asyncio.to_thread(a.create_user, "fiona", "pw-fiona-scale-1", "viewer")
    on_a = await Frontend.open(a, tokens["frontend"])
    on_b = await Frontend.open(b, tokens["frontend"])
    browser = await asyncio.to_thread(Browser, a, "fiona", "pw-fiona-scale-1")
    try:
        assert (await on_b.enqueue("panel-b", "scale-panel"))["type"] == "enqueued"
        host_a, port_a = on_a.ws.local_address[:2]
        host_b, port_b = on_b.ws.local_address[:2]
        row_a = f'data-frontend="websocket {host_a}:{port_a} replica-a"'
        label_b = f"websocket frontend {host_b}:{port_b} on replica replica-b: 1 outstanding"
        page = ""

        async def both_listed() -> bool:
            nonlocal page
            page = await asyncio.to_thread(browser.get, "/")
            return row_a in page and f'aria-label="{label_b}"' in page

        deadline = time.monotonic() + 5.0
        while not await both_listed():
            assert time.monotonic() < deadline, "replica A's page never listed both frontends"
            await asyncio.sleep(0.1)
        assert '<th scope="col" id="frontends-replica" >Replica</th>' in page
        assert '<td class="replica" dir="auto">replica-b</td>' in page
        assert re.search(r'<p id="frontends-missing" class="muted" hidden>', page)
        await on_b.cancel("panel-b")
    finally:
        await on_a.ws.close()
        await on_b.ws.close()


async def test_a_frontend_connected_to_both_replicas_is_one_frontend_in_the_header(
    replicas: tuple[DaphneProcess, DaphneProcess], tokens: dict[str, str]
) -> None:
    """Cortex frontends open streams to every scheduler address they are given,
    and a named websocket frontend (`?frontend=`) a socket to each replica;
    the header counts each once, by the address or name it sends."""
    a, b = replicas
    await asyncio.to_thread(a.create_user, "gael", "pw-gael-scale-1", "viewer")
    browser = await asyncio.to_thread(Browser, a, "gael", "pw-gael-scale-1")
    to_a = await CortexFrontend(f"127.0.0.1:{a.grpc_port}").start()
    to_b = await CortexFrontend(f"127.0.0.1:{b.grpc_port}").start()
    loops = [await to_a.open_loop(), await to_b.open_loop(address=to_a.address)]
    websocket_on_b = await Frontend.open(b, tokens["frontend"])
    named = [
        await ws_connect(f"{x.ws_url}/ws/frontend/?frontend=edge-1", tokens["frontend"])
        for x in (a, b)
    ]
    inspector = await browser.inspector()
    try:

        def all_listed_on_a() -> list[tuple[str, str, str]] | None:
            body = rest(a, tokens["editor"], "GET", "/api/v1/queriers/")
            rows = sorted(
                (f["transport"], f["address"] if f["address"] == "edge-1" else "", f["replica"])
                for f in body["frontends"]
                if f["transport"] == "websocket" or f["address"] == to_a.address
            )
            return rows if len(rows) == 5 else None

        assert await poll(all_listed_on_a, limit=10.0) == [
            ("grpc", "", "replica-a"),
            ("grpc", "", "replica-b"),
            ("websocket", "", "replica-b"),
            ("websocket", "edge-1", "replica-a"),
            ("websocket", "edge-1", "replica-b"),
        ]
        listed_at = time.time()
        await inspector.send(json.dumps({"type": "subscribe"}))
        # A subscribe may be answered with a tick up to two intervals old
        # (dashboard.live): read on to one taken after the listing above.
        count = None
        while True:
            frame = json.loads(await asyncio.wait_for(inspector.recv(), 10))
            await inspector.send(json.dumps({"type": "ack", "seq": frame["seq"]}))
            if "header" in frame:
                count = frame["header"]["stats"]["frontends"]
            if frame["ts"] >= listed_at:
                break
        # One Cortex frontend and one named websocket frontend on both
        # replicas, and an anonymous websocket frontend on B; summed per
        # replica it read 5, with only Cortex's counted once 4.
        assert count == 3
    finally:
        await inspector.close()
        await websocket_on_b.ws.close()
        for ws in named:
            await ws.close()
        for loop in loops:
            await loop.close()
        await to_a.close()
        await to_b.close()


async def test_querier_time_is_summed_per_tenant_over_the_replicas(
    replicas: tuple[DaphneProcess, DaphneProcess], tokens: dict[str, str]
) -> None:
    a, b = replicas
    tenant = "scale-usage"
    urls = [f"{a.ws_url}/ws/querier/", f"{b.ws_url}/ws/querier/"]
    queriers = queriers_everywhere(urls, tokens["querier"], "scale-uq", latency=lambda _: 1.0)
    frontends = [await Frontend.open(server, tokens["frontend"]) for server in (a, b)]
    try:
        await asyncio.gather(*(q.start() for q in queriers))
        for side, frontend in enumerate(frontends):
            for n in range(2):
                reply = await frontend.enqueue(f"u{side}-{n}", tenant)
                assert reply["type"] == "enqueued", reply
        for frontend in frontends:
            for _ in range(2):
                got = json.loads(await asyncio.wait_for(frontend.ws.recv(), 10))
                assert got["type"] == "result", got

        def summed_on_a() -> dict[str, Any] | None:
            body = rest(a, tokens["editor"], "GET", "/api/v1/queue/usage/?limit=50")
            rows = {row["tenant"]: row for row in body["tenants"]}
            row = rows.get(tenant)
            return body if row is not None and row["ended"] == 4 else None

        body = await poll(summed_on_a, limit=10.0)
        row = next(r for r in body["tenants"] if r["tenant"] == tenant)
        assert row["dispatched"] == 4 and row["running"] == 0
        # Four runs of 1 s, two per replica; summed twice it would be 8 s or more.
        # Each run's time also holds its round trips: 1 s runs (not 0.3 s) leave
        # them 2 s in all on a busy machine, where 0.3 s runs left 1.3 s.
        assert 4.0 <= row["querier_seconds"] < 6.0
        assert body["replicas"]["count"] == 2
    finally:
        await asyncio.gather(*(q.close() for q in queriers))
        for frontend in frontends:
            await frontend.ws.close()
