"""Request listings honour actor sub-queues: they list what dequeues will take, in turn."""

from __future__ import annotations

import random

from scheduler_core.model import QueryPriority, QueueConfig, Request, TenantLimits
from scheduler_core.queue import RequestQueue
from scheduler_core.queue_listing import take_page
from tests.fakes import FakeClock

ACTORS = ((), ("a",), ("b",), ("b", "x"), ("b", "y"), ("c", "d", "e"))


def loaded(seed: int, aging: float = 0.0) -> RequestQueue:
    clock = FakeClock(0.0)
    q = RequestQueue(
        QueueConfig(max_outstanding_requests_per_tenant=10_000, priority_aging_seconds=aging),
        clock=clock,
    )
    q.set_tenant_limits("t", TenantLimits(query_priority=QueryPriority(enabled=True)))
    rng = random.Random(seed)
    for i in range(60):
        clock.now = float(i)
        q.enqueue(
            Request(
                id=f"r{i}",
                tenant_id="t",
                component="ingester",
                priority=rng.choice((0, 0, 2)),
                actor_path=rng.choice(ACTORS),
            )  # fmt: skip
        )
    for i in rng.sample(range(60), 10):
        q.cancel(f"r{i}")
    return q


def dequeued(q: RequestQueue) -> list[str]:
    worker = q.connect_querier("q")
    out = []
    while (got := q.dequeue("q", worker)[0]) is not None:
        out.append(got.id)
        q.complete(got.id)
    return out


def test_a_leaf_with_actors_lists_exactly_the_order_its_dequeues_take() -> None:
    for seed in range(5):
        for aging in (0.0, 20.0):
            q = loaded(seed, aging)
            listed = [r.id for r in q.listing().queued(tenant="t", component="ingester")]
            tenant = [r.id for r in q.listing().queued(tenant="t")]
            assert listed == tenant == dequeued(q), (seed, aging)


def test_a_page_with_actors_resumes_after_its_last_row() -> None:
    q = loaded(1)
    whole = [r.id for r in q.listing().queued(tenant="t", component="ingester")]
    listing = q.listing().queued(tenant="t", component="ingester")
    first, _ = take_page(listing, 17)
    rest = q.listing().queued(tenant="t", component="ingester", after=listing.position())
    assert [r.id for r in first] + [r.id for r in rest] == whole


def test_matching_and_drain_find_every_request_in_actor_sub_queues() -> None:
    q = loaded(2)
    queued = len(q)
    assert len(q.listing().matching(tenant="t")) == queued
    assert len(q.drain()) == queued and len(q) == 0
