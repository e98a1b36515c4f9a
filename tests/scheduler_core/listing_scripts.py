"""Queues built by a random script for test_queue_listing.py, and readers of them.

`built_queues` draws a queue (either layout and component selection, aging
on or off, sharded tenants, reservations, priorities) and runs a script of
enqueues, dequeues, finishes, front re-queues, cancels, ticks and layout
switches on it; `Built` keeps the workers holding its in-flight requests.
`leaves` names the leaves holding work, `listed` and `paged` read a node's
listing whole or page by page, and `drain_all` takes what real dequeues
take, leaf by leaf.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from hypothesis import strategies as st

from scheduler_core.errors import TooManyRequests
from scheduler_core.model import (
    COMPONENTS,
    PriorityDef,
    QueryPriority,
    QueueConfig,
    Request,
    TenantLimits,
)
from scheduler_core.queue import RequestQueue
from scheduler_core.queue_listing import take_page
from tests.fakes import FakeClock

TENANTS = ("a", "b", "c", "d", "e")
QUERIERS = ("q0", "q1", "q2")

KINDS = ["enqueue"] * 8 + ["dequeue"] * 2 + ["finish", "cancel"] + ["tick"] * 3 + ["flip"]
OPS = st.lists(
    st.tuples(st.sampled_from(KINDS), st.integers(0, 50), st.integers(0, 50), st.integers(0, 50)),
    max_size=150,
)


class Built:
    """A queue after a script, with the workers that hold its in-flight requests."""

    def __init__(self, layout: str, selection: str, aging: float) -> None:
        self.clock = FakeClock(100.0)
        config = QueueConfig(
            layout=layout,  # type: ignore[arg-type]
            component_selection=selection,  # type: ignore[arg-type]
            max_outstanding_requests_per_tenant=60,
            priority_aging_seconds=aging,
        )
        self.q = RequestQueue(config, clock=self.clock)
        self.workers: list[tuple[str, int]] = []
        self.last: dict[tuple[str, int], int] = {}
        self.running: dict[tuple[str, int], Request] = {}
        self.queued: dict[str, Request] = {}
        self.requeued = False
        self.n = 0
        # How many tenants and components the script uses: few, so leaves fill up.
        self.tenants = len(TENANTS)
        self.components = len(COMPONENTS)

    def dequeue(self, key: tuple[str, int]) -> Request | None:
        got, last = self.q.dequeue(*key, self.last.get(key, -1))
        self.last[key] = last
        if got is not None:
            self.queued.pop(got.id)
            self.running[key] = got
        return got

    def run(self, ops: list[tuple[str, int, int, int]]) -> None:
        for kind, a, b, c in ops:
            if kind == "enqueue":
                request = Request(
                    id=f"r{self.n}",
                    tenant_id=TENANTS[a % self.tenants],
                    component=COMPONENTS[b % self.components],
                    priority=c % 4,
                )
                self.n += 1
                try:
                    self.q.enqueue(request)
                except TooManyRequests:
                    continue
                self.queued[request.id] = request
            elif kind == "dequeue":
                idle = [w for w in self.workers if w not in self.running]
                if idle:
                    self.dequeue(idle[a % len(idle)])
            elif kind == "finish" and self.running:
                key = sorted(self.running)[a % len(self.running)]
                request = self.running.pop(key)
                if b % 2:
                    self.q.requeue_front(request)
                    self.queued[request.id] = request
                    self.requeued = True
                else:
                    self.q.complete(request.id)
            elif kind == "cancel" and self.queued:
                rid = sorted(self.queued)[a % len(self.queued)]
                assert self.q.cancel(rid) is self.queued.pop(rid)
            elif kind == "tick":
                self.clock.now += (a % 7) * 0.5
            elif kind == "flip" and a % 4 == 0:
                other = (
                    "component-first" if self.q.config.layout == "tenant-first" else "tenant-first"
                )
                self.q.set_layout(other)  # type: ignore[arg-type]


@st.composite
def built_queues(draw: st.DrawFn) -> Built:
    aging = draw(st.sampled_from([0.0, 0.0, 0.5, 1.0, 4.0]))
    built = Built(
        draw(st.sampled_from(["tenant-first", "component-first"])),
        draw(st.sampled_from(["round-robin", "querier-worker-priority"])),
        aging,
    )
    q = built.q
    for querier in QUERIERS:
        for _ in range(draw(st.integers(1, 2))):
            key = (querier, q.connect_querier(querier))
            built.workers.append(key)
    for tenant in TENANTS:
        shard = draw(st.integers(0, 2))
        enabled = draw(st.booleans())
        # A reserved querier skips lower heads; with aging that can take a
        # higher priority before an aged lower one (documented), so
        # reservations are drawn only without aging.
        reserve = 0 if aging else draw(st.integers(0, 1))
        priorities = [PriorityDef(priority=2, reserved_queriers=reserve)] if enabled else []
        q.set_tenant_limits(
            tenant,
            TenantLimits(
                max_queriers=shard,
                query_priority=QueryPriority(enabled=enabled, priorities=priorities),
            ),
        )
    built.tenants = draw(st.integers(1, len(TENANTS)))
    built.components = draw(st.integers(1, len(COMPONENTS)))
    bulk = draw(
        st.lists(
            st.tuples(st.integers(0, 50), st.integers(0, 50), st.integers(0, 50)),
            min_size=5,
            max_size=60,
        )
    )
    built.run([("enqueue", a, b, c) for a, b, c in bulk])
    built.run(draw(OPS))
    return built


def leaves(q: RequestQueue) -> list[tuple[str, str]]:
    counts = q.listing()
    return [
        (t, c) for t in TENANTS for c in COMPONENTS if counts.queued_count(tenant=t, component=c)
    ]


def listed(q: RequestQueue, **node: object) -> list[str]:
    return [r.id for r in q.listing().queued(**node)]  # type: ignore[arg-type]


def paged(
    q: RequestQueue,
    size: int,
    predicate: Callable[[Request], bool] | None = None,
    budget: int | None = None,
    **node: object,
) -> list[str]:
    out: list[str] = []
    after = None
    while True:
        page = q.listing().queued(after=after, **node)  # type: ignore[arg-type]
        rows, done = take_page(page, size, predicate, budget)
        out += [r.id for r in rows]
        after = page.position()
        if done:
            return out
        assert len(out) <= len(q) + 1, "paging does not end"


def drain_all(built: Built) -> dict[tuple[str, str], list[str]]:
    """Every worker takes and finishes work until nobody gets any; ids per leaf."""
    taken: dict[tuple[str, str], list[str]] = defaultdict(list)
    for key, request in list(built.running.items()):
        built.q.complete(request.id)
        del built.running[key]
    progress = True
    while progress:
        progress = False
        for key in built.workers:
            got = built.dequeue(key)
            if got is not None:
                progress = True
                taken[(got.tenant_id, got.component)].append(got.id)
                built.q.complete(got.id)
                del built.running[key]
    assert len(built.q) == 0
    return taken
