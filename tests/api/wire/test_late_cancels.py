"""A peer's cancel that ends after its asker stopped waiting is recorded by the peer.

The asker records what answered in time and names the peer missing; the
peer, which heard the cancel in time and carried it out, records its own
part on History, under the operator's name, source and note.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.db import database_sync_to_async

from api.store.models import OperatorCancel
from api.wire import queue_requests
from api.wire.late_cancels import audit_args
from api.wire.queue_merged import merged
from api.wire.queue_rows import RequestFilter
from tests.api.wire.test_queue_peers import fill, pair  # noqa: F401 - the fixture
from tests.polling import until

pytestmark = pytest.mark.django_db(transaction=True)


def slow_on(replica_host: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cancels of `replica_host`'s runtime take longer than the peer timeout (0.5 s)."""
    real = queue_requests.cancel_matching

    async def slow(runtime: Any, *args: Any, **kwargs: Any) -> Any:
        if runtime is replica_host.runtime:
            await asyncio.sleep(0.8)
        return await real(runtime, *args, **kwargs)

    monkeypatch.setattr(queue_requests, "cancel_matching", slow)


async def records() -> list[OperatorCancel]:
    return await database_sync_to_async(lambda: list(OperatorCancel.objects.all()))()


async def test_a_peer_that_cancels_after_its_asker_gave_up_records_its_own_part(
    pair: Any,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hosts, peers = pair
    fill(hosts["r-a"], "a", 1)
    fill(hosts["r-b"], "b", 3)
    slow_on(hosts["r-b"], monkeypatch)
    audit = audit_args("alice", "ui", "runaway dashboard")
    counts = await merged.cancel_matching(
        peers["r-a"], RequestFilter(tenant="t"), "by alice", False, audit
    )
    assert counts == (1, 1, ["r-a"], ["r-b"])  # r-b too slow: named missing
    await until(lambda: len(hosts["r-b"].runtime.queue) == 0)
    found: list[OperatorCancel] = []

    async def recorded() -> bool:
        found[:] = await records()
        return bool(found)

    deadline = asyncio.get_running_loop().time() + 5
    while not await recorded():
        assert asyncio.get_running_loop().time() < deadline, "r-b recorded nothing"
        await asyncio.sleep(0.05)
    [row] = found
    assert (row.matched, row.cancelled, row.replicas) == (3, 3, ["r-b"])
    assert row.filter["tenant"] == "t" and row.author_name == "alice" and row.source == "ui"
    assert row.note == "r-b's part, done after r-a stopped waiting for it: runaway dashboard"


async def test_a_peer_that_answers_in_time_records_nothing_of_its_own(
    pair: Any,  # noqa: F811 - the fixture
) -> None:
    hosts, peers = pair
    fill(hosts["r-b"], "b", 2)
    audit = audit_args("alice", "api", "")
    counts = await merged.cancel_matching(
        peers["r-a"], RequestFilter(tenant="t"), "by alice", False, audit
    )
    assert counts == (2, 2, ["r-a", "r-b"], [])
    assert await records() == []
