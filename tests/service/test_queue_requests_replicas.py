"""queue/requests/ and rule-stats/ across two real replicas over real Redis (and PostgreSQL).

Each replica holds its own queue; asking either one lists both (each row
naming its replica), pages across them, cancels a request the other replica
holds (its frontend is told), cancels by filter on both, and names a replica
that does not answer in time in `replicas_missing`. Each replica counts its
own rule hits; either one's rule-stats sums both, with a `replicas` breakdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

import pytest

from loadgen.daphne_process import DaphneProcess
from loadgen.wsclients import ws_connect
from tests.service.replica_pair import replica_pair

NOW = time.time()


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[DaphneProcess, DaphneProcess]]:
    with replica_pair(QUEUE_PEER_TIMEOUT="1") as pair:
        yield pair


@pytest.fixture(scope="module")
def tokens(pair: tuple[DaphneProcess, DaphneProcess]) -> dict[str, str]:
    a, _ = pair
    return {role: a.issue_token(role, name=f"rp-{role}") for role in ("editor", "frontend")}


def call(server: DaphneProcess, token: str, path: str, body: Any = None) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"{server.base_url}/api/v1/{path}",
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="GET" if body is None else "POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=15) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


async def acall(server: DaphneProcess, token: str, path: str, body: Any = None) -> Any:
    return await asyncio.to_thread(call, server, token, path, body)


class Frontend:
    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.outcomes: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.replies: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def open(cls, server: DaphneProcess, token: str) -> Frontend:
        return cls(await ws_connect(f"{server.ws_url}/ws/frontend/", token))

    async def _read(self) -> None:
        async for raw in self.ws:
            msg = json.loads(raw)
            await (self.outcomes if msg["type"] in ("failed", "result") else self.replies).put(msg)

    async def close(self) -> None:
        await self.ws.close()
        self.reader.cancel()

    async def enqueue(self, rid: str, tenant: str, query: str) -> dict[str, Any]:
        msg = {"type": "enqueue", "id": rid, "tenant": tenant, "query": query}
        await self.ws.send(json.dumps(msg | {"start": NOW - 600, "end": NOW, "step": 15}))
        reply = await asyncio.wait_for(self.replies.get(), 10)
        assert reply["type"] == "enqueued", reply
        return reply


@contextlib.asynccontextmanager
async def frontends_on(
    servers: Iterable[DaphneProcess], token: str
) -> AsyncIterator[list[Frontend]]:
    """A websocket frontend on each server, closed on the way out (a failed check too)."""
    frontends: list[Frontend] = []
    try:
        for server in servers:
            frontends.append(await Frontend.open(server, token))
        yield frontends
    finally:
        for frontend in frontends:
            await frontend.close()


async def until_both_seen(server: DaphneProcess, token: str) -> None:
    deadline = time.monotonic() + 20
    while True:
        status, body = await acall(server, token, "queue/requests/?tenant=none")
        if set(body.get("replicas", ())) == {"replica-a", "replica-b"}:
            return
        assert time.monotonic() < deadline, body
        await asyncio.sleep(0.3)


async def test_either_replica_lists_pages_and_cancels_across_both(
    pair: tuple[DaphneProcess, DaphneProcess], tokens: dict[str, str]
) -> None:
    a, b = pair
    editor = tokens["editor"]
    async with frontends_on((a, b), tokens["frontend"]) as (on_a, on_b):
        for i in range(3):
            await on_a.enqueue(f"a{i}", "shared", f"rate(a_side_{i}[1m])")
            await on_b.enqueue(f"b{i}", "shared", f"rate(b_side_{i}[1m])")
        await until_both_seen(a, editor)

        for server in (a, b):
            status, page = await acall(server, editor, "queue/requests/?tenant=shared")
            assert status == 200 and page["total"] == 6 and page["replicas_missing"] == [], page
            # Replica by replica, each in its own dequeue order.
            assert [(r["replica"], r["client_id"]) for r in page["results"]] == [
                ("replica-a", "a0"), ("replica-a", "a1"), ("replica-a", "a2"),
                ("replica-b", "b0"), ("replica-b", "b1"), ("replica-b", "b2"),
            ]  # fmt: skip
            # Who may serve it comes with the merged page too (no querier connected here).
            assert page["serving"] == {"shard": None, "queriers": 0, "reserved": []}
        seen, cursor = [], ""
        while True:
            status, page = await acall(
                a,
                editor,
                "queue/requests/?tenant=shared&limit=4" + (f"&cursor={cursor}" if cursor else ""),
            )
            seen += [r["client_id"] for r in page["results"]]
            cursor = page["next"] or ""
            if not cursor:
                break
        assert seen == ["a0", "a1", "a2", "b0", "b1", "b2"]

        # A cancel through replica A of a request replica B holds reaches B's frontend.
        status, page = await acall(a, editor, "queue/requests/?tenant=shared&search=b_side_1")
        (row,) = page["results"]
        status, cancelled = await acall(
            a, editor, f"queue/requests/{row['id']}/cancel/", {"note": "x", "replica": "replica-b"}
        )
        assert status == 200 and cancelled["replica"] == "replica-b"
        failed = await asyncio.wait_for(on_b.outcomes.get(), 10)
        assert failed == {
            "type": "failed",
            "id": "b1",
            "error": "cancelled by operator token:rp-editor: x",
        }

        status, counts = await acall(
            a, editor, "queue/cancel/", {"tenant": "shared", "regex": "side_[02]"}
        )
        assert counts == {
            "matched": 4,
            "cancelled": 4,
            "replicas": ["replica-a", "replica-b"],
            "replicas_missing": [],
        }
        told = [await asyncio.wait_for(q.outcomes.get(), 10) for q in (on_a, on_a, on_b, on_b)]
        assert sorted(m["id"] for m in told) == ["a0", "a2", "b0", "b2"]
        status, page = await acall(b, editor, "queue/requests/?tenant=shared")
        assert [r["client_id"] for r in page["results"]] == ["a1"] and page["total"] == 1

        # A replica that stops answering is named, never silently left out.
        assert b.proc is not None
        os.kill(b.proc.pid, signal.SIGSTOP)
        try:
            status, page = await acall(a, editor, "queue/requests/?tenant=shared")
        finally:
            os.kill(b.proc.pid, signal.SIGCONT)
        assert status == 200 and [r["client_id"] for r in page["results"]] == ["a1"]
        assert page["replicas_missing"] == ["replica-b"]


async def test_a_cancel_a_hung_replica_missed_is_a_503_and_does_not_happen_when_it_wakes(
    pair: tuple[DaphneProcess, DaphneProcess], tokens: dict[str, str]
) -> None:
    """It was a 404, and the question waited in Redis: the cancel ran seconds later, unrecorded."""
    a, b = pair
    editor = tokens["editor"]
    on_b = await Frontend.open(b, tokens["frontend"])
    await on_b.enqueue("hung-0", "hung", "rate(hung_side[1m])")
    await until_both_seen(a, editor)
    status, page = await acall(a, editor, "queue/requests/?tenant=hung")
    (row,) = page["results"]
    assert b.proc is not None
    os.kill(b.proc.pid, signal.SIGSTOP)
    try:
        status, refused = await acall(
            a, editor, f"queue/requests/{row['id']}/cancel/", {"replica": "replica-b"}
        )
        # Hung past the asker's timeout (1 s here) before it hears the question.
        await asyncio.sleep(1.5)
    finally:
        os.kill(b.proc.pid, signal.SIGCONT)
    assert status == 503 and refused["replicas_missing"] == ["replica-b"], refused
    # Asked over the same channel, so answered after B heard the late cancel.
    found = f"queue/requests/{row['id']}/?replica=replica-b"
    deadline = time.monotonic() + 10
    while (status := (await acall(a, editor, found))[0]) == 503:
        assert time.monotonic() < deadline
    assert status == 200 and on_b.outcomes.empty()
    status, cancelled = await acall(
        a, editor, f"queue/requests/{row['id']}/cancel/", {"replica": "replica-b"}
    )
    assert status == 200 and (await asyncio.wait_for(on_b.outcomes.get(), 10))["id"] == "hung-0"
    await on_b.close()


RANKED: dict[str, Any] = {
    "query_priority": {
        "enabled": True,
        "default_priority": 0,
        "priorities": [{"priority": 5, "query_attributes": [{"regex": ".*hot.*"}]}],
    }
}


async def until_ranked(frontend: Frontend, side: str) -> None:
    """Config reaches each replica by its reconcile loop: probe until it ranks.

    Probes classified before the config arrived were counted under the old
    limits, which the stats leave out; the one that ranks 5 counts as `hot`.
    """
    deadline = time.monotonic() + 20
    for n in range(1_000):
        if (await frontend.enqueue(f"{side}-probe-{n}", "ranked", "hot_probe"))["priority"] == 5:
            return
        assert time.monotonic() < deadline, "the priority rule never applied"
        await asyncio.sleep(0.2)


async def test_either_replica_sums_both_replicas_rule_hits_with_a_breakdown(
    pair: tuple[DaphneProcess, DaphneProcess], tokens: dict[str, str]
) -> None:
    a, b = pair
    request = urllib.request.Request(
        f"{a.base_url}/api/v1/tenants/ranked/",
        data=json.dumps(RANKED).encode(),
        method="PUT",
        headers={"Authorization": f"Bearer {tokens['editor']}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=15) as response:
        assert response.status in (200, 201)
    async with frontends_on((a, b), tokens["frontend"]) as (on_a, on_b):
        await until_ranked(on_a, "a")
        await until_ranked(on_b, "b")
        for i in range(3):
            await on_a.enqueue(f"ra{i}", "ranked", f"sum(hot_{i})")
        await on_a.enqueue("ra-cold", "ranked", "up")
        await on_b.enqueue("rb-cold-0", "ranked", "up")
        await on_b.enqueue("rb-cold-1", "ranked", "down")

        # Counts cross replicas every few seconds: wait until each sees the other's.
        expected_totals = {"replica-a": 5, "replica-b": 3}
        for server, own in ((a, "replica-a"), (b, "replica-b")):
            deadline = time.monotonic() + 30
            while True:
                status, stats = await acall(server, tokens["editor"], "tenants/ranked/rule-stats/")
                assert status == 200, stats
                breakdown = {r["replica"]: r["total"]["5m"] for r in stats["replicas"]}
                if breakdown == expected_totals:
                    break
                assert time.monotonic() < deadline, stats
                await asyncio.sleep(0.5)
            assert stats["replicas"][0]["replica"] == own  # its own counts come first
            assert all(r["current"] for r in stats["replicas"])
            (rule,) = stats["priorities"]
            assert rule["matched"]["5m"] == rule["attributes"][0]["matched"]["5m"] == 5
            assert stats["default"]["matched"]["5m"] == 3
            assert stats["total"]["5m"] == stats["total"]["1h"] == stats["total"]["version"] == 8
            assert 0 < stats["counting_seconds"] < 120  # the longer-counting replica's, over Redis
