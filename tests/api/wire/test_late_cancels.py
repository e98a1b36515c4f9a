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


async def recorded_rows(count: int) -> list[OperatorCancel]:
    """The History cancel records, once there are `count` of them (5 s at most)."""
    found: list[OperatorCancel] = []
    deadline = asyncio.get_running_loop().time() + 5
    while len(found := await records()) < count:
        assert asyncio.get_running_loop().time() < deadline, f"{len(found)} of {count} recorded"
        await asyncio.sleep(0.05)
    return found


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
    [row] = await recorded_rows(1)
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


async def test_a_reply_sent_in_time_that_reaches_an_asker_which_gave_up_is_recorded_by_the_asker(
    pair: Any,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The peer judged itself in time (by the deadline), but the reply came
    # after the asker stopped waiting (its loop held up by another cancel):
    # the peer recorded nothing and the asker dropped the reply.
    hosts, peers = pair
    fill(hosts["r-b"], "b", 3)
    slow_on(hosts["r-b"], monkeypatch)
    monkeypatch.setattr(type(peers["r-b"]), "_late", staticmethod(lambda message: False))
    audit = audit_args("alice", "api", "")
    counts = await merged.cancel_matching(
        peers["r-a"], RequestFilter(tenant="t"), "by alice", False, audit
    )
    assert counts == (0, 0, ["r-a"], ["r-b"])
    [row] = await recorded_rows(1)
    assert (row.matched, row.cancelled, row.replicas) == (3, 3, ["r-b"])
    assert row.note == "r-b's part, done after r-a stopped waiting for it"


async def test_a_late_part_the_peer_recorded_is_not_recorded_again_by_the_asker(
    pair: Any,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hosts, peers = pair
    fill(hosts["r-b"], "b", 2)
    slow_on(hosts["r-b"], monkeypatch)
    audit = audit_args("alice", "api", "")
    await merged.cancel_matching(peers["r-a"], RequestFilter(tenant="t"), "by alice", False, audit)
    await recorded_rows(1)
    # Once the reply (saying its peer recorded it) has reached the asker, and
    # anything it started has ended, the one row is still the only one.
    questions = peers["r-a"]._gave_up._questions
    await until(lambda: all(not q.unanswered for q in questions.values()))
    await until(lambda: not peers["r-a"]._tasks)
    assert len(await records()) == 1
