"""Rule hit counts, the dry run and Simulate on two real replicas (PostgreSQL + Redis).

Real websocket frontends send part of one tenant's traffic to each replica,
real queriers connected to both serve it. Either replica's rule-stats sums
both, names no replica missing and gives each replica's counting span; a
replica killed and restarted counts afresh, never twice. The dry run and
a `recent` simulation replay only the answering replica's traffic and say
so, naming it and the other replica.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from loadgen.daphne_process import DaphneProcess
from loadgen.wsclients import FrontendClient, queriers_everywhere
from tests.service.replica_pair import replica_pair

RULES: dict[str, Any] = {
    "query_priority": {
        "enabled": True,
        "default_priority": 0,
        "priorities": [{"priority": 5, "query_attributes": [{"regex": ".*hot.*"}]}],
    }
}


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[DaphneProcess, DaphneProcess]]:
    with replica_pair() as pair:
        yield pair


def call(server: DaphneProcess, token: str, path: str, body: Any = None, method: str = "") -> Any:
    request = urllib.request.Request(
        f"{server.base_url}/api/v1/{path}",
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method=method or ("GET" if body is None else "POST"),
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise AssertionError(f"{path}: {exc.code} {exc.read()[:500]!r}") from None


class Sender:
    """A named websocket frontend on one replica; `send` waits for each result."""

    def __init__(self, server: DaphneProcess, token: str, name: str) -> None:
        self.replies: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        url = f"{server.ws_url}/ws/frontend/"
        self.client = FrontendClient(url, token, self.replies.put_nowait, name=name)
        self.sent = 0

    async def send(self, query: str) -> dict[str, Any]:
        """Enqueue `query` for tenant `t`; its `enqueued` reply (the result is awaited too)."""
        self.sent += 1
        now = time.time()
        rid = f"{id(self)}-{self.sent}"
        await self.client.send(
            {"type": "enqueue", "id": rid, "tenant": "t", "query": query,
             "start": now - 600, "end": now, "step": 15}
        )  # fmt: skip
        got = {}
        while "result" not in got:
            msg = await asyncio.wait_for(self.replies.get(), 10)
            got[msg["type"]] = msg
        return got["enqueued"]

    async def until_ranked(self) -> None:
        """Until this replica applies RULES: a probe ranked 5 counts under them as `hot`."""
        deadline = time.monotonic() + 20
        while (await self.send("hot_probe"))["priority"] != 5:
            assert time.monotonic() < deadline, "the priority rule never applied"
            await asyncio.sleep(0.2)


async def until_stats(server: DaphneProcess, token: str, totals: dict[str, int]) -> Any:
    """rule-stats once its breakdown is `totals` (replica -> requests since the version)."""
    deadline = time.monotonic() + 30
    while True:
        stats = await asyncio.to_thread(call, server, token, "tenants/t/rule-stats/")
        if {r["replica"]: r["total"]["version"] for r in stats["replicas"]} == totals:
            return stats
        assert time.monotonic() < deadline, stats
        await asyncio.sleep(0.5)


async def test_rule_stats_count_each_replica_once_across_a_restart_and_samples_name_theirs(
    pair: tuple[DaphneProcess, DaphneProcess],
) -> None:
    a, b = pair
    editor, frontend, querier = (
        a.issue_token(r, name=f"rt-{r}") for r in ("editor", "frontend", "querier")
    )
    call(a, editor, "tenants/t/", RULES, method="PUT")
    queriers = queriers_everywhere([f"{s.ws_url}/ws/querier/" for s in pair], querier, "q-1")
    on_a, on_b = Sender(a, frontend, "fa"), Sender(b, frontend, "fb")
    for client in [*queriers, on_a.client, on_b.client]:
        await client.start()
    await on_a.until_ranked()
    await on_b.until_ranked()
    for query in ("sum(hot_a)", "up", "up", "down"):
        await on_a.send(query)
    await on_b.send("up")

    for server in (a, b):
        stats = await until_stats(server, editor, {"replica-a": 5, "replica-b": 2})
        assert stats["total"]["version"] == 7 and stats["default"]["matched"]["version"] == 4
        assert stats["replicas_missing"] == [] and "replicas_note" not in stats
        assert all(0 < r["counting_seconds"] < 60 for r in stats["replicas"]), stats

    # Each replica's sample only (its probes too), and the answer says whose.
    for sender, server, other in ((on_a, a, "replica-b"), (on_b, b, "replica-a")):
        report = call(server, editor, "tenants/t/dry-run/", {})
        assert report["sample"] == sender.sent, report
        assert (report["replica"], report["other_replicas"]) == (server.env["REPLICA_ID"], [other])
    simulated = call(b, editor, "simulate/", {"workload": {"kind": "recent", "window_seconds": 60}})
    workload = simulated["workload"]
    assert (workload["replica"], workload["other_replicas"]) == ("replica-b", ["replica-a"])
    assert simulated["live"]["requests"]["offered"] == on_b.sent
    recording = call(a, editor, "recording/?window_seconds=60")
    assert (recording["replica"], recording["other_replicas"]) == ("replica-a", ["replica-b"])

    # Killed and started again: its counts restart, and are summed once.
    await on_b.client.close()
    for q in queriers:
        await q.close(shutdown=False)
    assert b.proc is not None
    b.proc.kill()
    b.proc.wait()
    b.start()
    queriers = queriers_everywhere([f"{s.ws_url}/ws/querier/" for s in pair], querier, "q-1")
    on_b = Sender(b, frontend, "fb")
    for client in [*queriers, on_b.client]:
        await client.start()
    await on_b.send("sum(hot_b)")
    stats = await until_stats(a, editor, {"replica-a": 5, "replica-b": 1})
    assert stats["total"]["version"] == 6 and stats["replicas_missing"] == []
    (row_a, row_b) = stats["replicas"]
    assert row_b["counting_seconds"] < row_a["counting_seconds"]
    for client in [*queriers, on_a.client, on_b.client]:
        await client.close()
