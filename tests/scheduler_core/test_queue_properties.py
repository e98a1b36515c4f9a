"""Random operation sequences against a plain model of the queue.

The model keeps one actor tree per (tenant, component, priority), a plain
list-based rendering of Loki's round-robin (a FIFO while no actor path is
in play), and the set of connected queriers, and recomputes shards and
reservations from the public `shuffle_shard` / `reserved_queriers`
functions, so the queue's incremental structures are checked against a
from-scratch answer after every step. The model lives in queue_model.py;
the rules and invariants are here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from scheduler_core.errors import TooManyRequests
from scheduler_core.model import COMPONENTS, PriorityDef, QueryPriority, Request, TenantLimits
from scheduler_core.snapshot import QueueSnapshot
from tests.scheduler_core.queue_model import DEFAULT_LIMIT, Path, QueueModelMachine

TENANTS = ("a", "b", "c", "d")
QUERIERS = ("q0", "q1", "q2", "q3")

# Actor paths the scripts use: none, siblings, nested, and deeper than 3 levels.
ACTORS: tuple[Path, ...] = ((), (), ("u1",), ("u2",), ("u1", "x"), ("u1", "y"), ("u2", "x", "z"),
                            ("a", "b", "c", "d"))  # fmt: skip


class QueueMachine(QueueModelMachine):
    """Each rule acts on the queue and the model alike; the invariants compare them."""

    # -- rules ------------------------------------------------------------
    @initialize(
        workers=st.lists(st.sampled_from(QUERIERS), min_size=2, max_size=8),
        limits=st.lists(
            st.tuples(
                st.sampled_from(TENANTS),
                st.integers(0, 3),
                st.booleans(),
                st.sampled_from([(), ((2, 1),), ((1, 1), (3, 1)), ((1, 0.3), (2, 0.3))]),
            ),
            max_size=4,
        ),
        requests=st.lists(
            st.tuples(
                st.sampled_from(TENANTS),
                st.sampled_from(COMPONENTS),
                st.integers(0, 3),
                st.sampled_from(ACTORS),
            ),
            max_size=12,
        ),
        layout=st.sampled_from(["tenant-first", "component-first"]),
        selection=st.sampled_from(["round-robin", "querier-worker-priority"]),
    )
    def start(
        self,
        workers: list[str],
        limits: list[tuple[str, int, bool, tuple[tuple[int, float], ...]]],
        requests: list[tuple[str, str, int, Path]],
        layout: str,
        selection: str,
    ) -> None:
        """Begin with queriers, limits and work, so every rule has something to act on.

        Tenant a always reserves a querier for priority 2 and tenant b is
        sharded to one querier, so reservations and shards are always live.
        """
        self.reconfigure(layout, selection, 0.0, 3)
        for querier in workers:
            self.connect(querier)
        self.set_limits("a", 0, None, True, [(2, 1)], False)
        self.set_limits("b", 1, None, False, [], False)
        for tenant, max_queriers, enabled, reserved in limits:
            self.set_limits(tenant, max_queriers, None, enabled, list(reserved), False)
        for tenant, component, priority, actor in requests:
            self.enqueue(tenant, component, priority, actor)

    @rule(
        tenant=st.sampled_from(TENANTS),
        component=st.sampled_from(COMPONENTS),
        priority=st.integers(0, 3),
        actor=st.sampled_from(ACTORS),
    )
    def enqueue(self, tenant: str, component: str, priority: int, actor: Path) -> None:
        rid = f"r{self.next_id}"
        self.next_id += 1
        request = Request(
            id=rid, tenant_id=tenant, component=component, priority=priority, actor_path=actor
        )
        limit = self.limits.get(tenant, TenantLimits()).max_outstanding
        full = self.outstanding(tenant) >= (DEFAULT_LIMIT if limit is None else limit)
        try:
            self.q.enqueue(request)
        except TooManyRequests:
            assert full
            return
        assert not full
        self.requests[rid] = request
        self.push(request, front=False, path=actor)
        assert request.actor_path == self.placed[rid]

    @precondition(lambda self: bool(self.idle_workers()))
    @rule(data=st.data())
    def dequeue(self, data: st.DataObject) -> None:
        querier, worker = data.draw(st.sampled_from(self.idle_workers()))
        got, last = self.q.dequeue(querier, worker, self.workers[(querier, worker)])
        if got is None:
            for rid in self.queued_ids():
                floor = self.allowed_floor(querier, self.requests[rid].tenant_id)
                assert floor is None or self.requests[rid].priority < floor, rid
            return
        self.workers[(querier, worker)] = last
        floor = self.allowed_floor(querier, got.tenant_id)
        assert floor is not None and got.priority >= floor
        tree = self.fifo[self.key(got)]
        # FIFO within one actor, actors and local work in turn (Loki's order).
        assert tree.head() == got.id
        if not self.q.config.priority_aging_seconds:
            leaf_prios = [
                k[2] for k, v in self.fifo.items() if v.ids() and k[:2] == self.key(got)[:2]
            ]
            assert got.priority == max(p for p in leaf_prios if p >= floor)
        assert tree.pop() == got.id
        self.in_flight[got.id] = (querier, worker)

    @precondition(lambda self: bool(self.idle_workers()))
    @rule(data=st.data())
    def dequeue_again(self, data: st.DataObject) -> None:
        """Dequeues are the point of the test: make them twice as likely."""
        self.dequeue(data)

    @rule(
        tenant=st.sampled_from(TENANTS),
        component=st.sampled_from(COMPONENTS),
        priority=st.integers(0, 3),
    )
    def enqueue_again(self, tenant: str, component: str, priority: int) -> None:
        self.enqueue(tenant, component, priority, ("u1", "x") if priority % 2 else ())

    @precondition(lambda self: bool(self.in_flight))
    @rule(data=st.data(), requeue=st.booleans())
    def finish(self, data: st.DataObject, requeue: bool) -> None:
        rid = data.draw(st.sampled_from(sorted(self.in_flight)))
        del self.in_flight[rid]
        if requeue:
            self.q.requeue_front(self.requests[rid])
            self.push(self.requests[rid], front=True)
        else:
            assert self.q.complete(rid) is self.requests[rid]
            self.finished.add(rid)

    @precondition(lambda self: bool(self.requests))
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        rid = data.draw(st.sampled_from(sorted(self.requests)))
        got = self.q.cancel(rid)
        if rid in self.finished:
            assert got is None
            return
        assert got is self.requests[rid]
        if rid in self.in_flight:
            del self.in_flight[rid]
        else:
            self.fifo[self.key(got)].remove(rid, self.placed[rid])
        self.finished.add(rid)

    @rule(querier=st.sampled_from(QUERIERS))
    def connect(self, querier: str) -> None:
        taken = {w for q, w in self.workers if q == querier}
        if len(taken) >= 5:
            return
        worker = self.q.connect_querier(querier)
        assert worker == min(set(range(6)) - taken)
        self.workers[(querier, worker)] = -1

    @precondition(lambda self: bool(self.workers))
    @rule(data=st.data(), requeue=st.booleans())
    def disconnect(self, data: st.DataObject, requeue: bool) -> None:
        querier, worker = data.draw(st.sampled_from(sorted(self.workers)))
        del self.workers[(querier, worker)]
        released = self.q.disconnect_querier_worker(querier, worker)
        held = [rid for rid, w in self.in_flight.items() if w == (querier, worker)]
        assert ([released.id] if released else []) == held
        if released is None:
            return
        del self.in_flight[released.id]
        if requeue:
            self.q.requeue_front(released)
            self.push(released, front=True)
        else:
            self.finished.add(released.id)

    @rule(
        layout=st.sampled_from(["tenant-first", "component-first"]),
        selection=st.sampled_from(["round-robin", "querier-worker-priority"]),
        aging=st.sampled_from([0.0, 0.0, 3.0]),
        levels=st.sampled_from([3, 3, 2, 1, 0]),
    )
    def reconfigure(self, layout: str, selection: str, aging: float, levels: int) -> None:
        config = replace(
            self.q.config,
            layout=layout,  # type: ignore[arg-type]
            component_selection=selection,  # type: ignore[arg-type]
            priority_aging_seconds=aging,
            max_queue_hierarchy_levels=levels,
        )
        self.q.set_config(config)

    @rule(
        tenant=st.sampled_from(TENANTS),
        max_queriers=st.integers(0, 3),
        max_outstanding=st.sampled_from([None, 1, 3]),
        enabled=st.booleans(),
        reserved=st.lists(
            st.tuples(st.integers(0, 3), st.sampled_from([0, 1, 2, 0.3, 0.5])),
            max_size=3,
            unique_by=lambda pair: pair[0],
        ),
        remove=st.booleans(),
    )
    def set_limits(
        self,
        tenant: str,
        max_queriers: int,
        max_outstanding: int | None,
        enabled: bool,
        reserved: list[tuple[int, float]],
        remove: bool,
    ) -> None:
        if remove:
            self.q.remove_tenant_limits(tenant)
            self.limits.pop(tenant, None)
            return
        qp = QueryPriority(enabled=enabled, priorities=[PriorityDef(p, r) for p, r in reserved])
        limits = TenantLimits(max_queriers, max_outstanding, qp)
        self.q.set_tenant_limits(tenant, limits)
        self.limits[tenant] = limits

    # -- invariants -------------------------------------------------------
    @invariant()
    def every_request_is_in_exactly_one_place(self) -> None:
        queued = self.queued_ids()
        places = Counter(queued) + Counter(list(self.in_flight)) + Counter(list(self.finished))
        assert places == Counter(list(self.requests))
        assert len(self.q) == len(queued)
        assert all(self.q.in_flight(rid) for rid in self.in_flight)
        for tenant in TENANTS:
            length = sum(len(v.ids()) for k, v in self.fifo.items() if k[0] == tenant)
            assert self.q.tenant_length(tenant) == length

    @invariant()
    def snapshot_counts_equal_the_contents(self) -> None:
        snap = self.q.snapshot()
        assert snap.total == len(self.queued_ids())
        expected = {
            (t, c): sorted(
                (
                    (p, len(v.ids()))
                    for (t2, c2, p), v in self.fifo.items()
                    if (t2, c2) == (t, c) and v.ids()
                ),
                reverse=True,
            )
            for (t, c, _), tree in self.fifo.items()
            if tree.ids()
        }
        assert {(s.tenant_id, s.component): list(s.by_priority) for s in snap.leaves} == expected
        assert all(s.length == sum(n for _, n in s.by_priority) for s in snap.leaves)
        # A tenant row's length is its leaves' sum (/metrics reads the rows).
        per_tenant: Counter[str] = Counter()
        for s in snap.leaves:
            per_tenant[s.tenant_id] += s.length
        assert {t.tenant_id: t.length for t in snap.tenants if t.length} == dict(+per_tenant)
        for leaf in snap.leaves:
            actors: Counter[Path] = Counter()
            for (t, c, _), tree in self.fifo.items():
                if (t, c) == (leaf.tenant_id, leaf.component):
                    tree.counts((), actors)
            # Few actors here, so the snapshot lists every one, exactly.
            assert {a.path: a.length for a in leaf.actors} == dict(+actors)
            assert all(a.others == 0 for a in leaf.actors)
            # The snapshot's one pass agrees with the leaf's separate readings.
            live = self.q._tenants[leaf.tenant_id].children[leaf.component]  # noqa: SLF001
            assert leaf.oldest_enqueued_at == live.oldest_enqueued_at()
            assert live.snapshot_row() == (
                live.by_priority(),
                leaf.oldest_enqueued_at,
                live.has_actors,
            )
        self.counts_agree_with(snap)
        busy = {
            w.request_id: (w.querier_id, w.worker_id)
            for view in snap.queriers
            for w in view.workers
            if w.request_id is not None
        }
        assert busy == self.in_flight

    def counts_agree_with(self, snap: QueueSnapshot) -> None:
        """`counts()` (what /metrics reads) says what the snapshot says."""
        counts = self.q.counts()
        enabled = {t.tenant_id: t.priority_enabled for t in snap.tenants}
        assert sorted(counts.by_priority) == sorted(
            (s.tenant_id, s.component, p, n, enabled[s.tenant_id])
            for s in snap.leaves
            for p, n in s.by_priority
        )
        assert dict(counts.queued) == {t.tenant_id: t.length for t in snap.tenants if t.length}
        heads = [s.oldest_enqueued_at for s in snap.leaves if s.length]
        assert counts.oldest_enqueued_at == (min(heads) if heads else None)
        assert (counts.total, counts.queriers) == (snap.total, snap.queriers)


QueueMachine.TestCase.settings = settings(
    max_examples=200, stateful_step_count=50, deadline=None, derandomize=True
)
TestQueueProperties = QueueMachine.TestCase
