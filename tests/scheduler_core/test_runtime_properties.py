"""Random operation sequences through `SchedulerRuntime`, checked against a ledger.

The queue-level state machine (test_queue_properties.py) checks that the
queue loses nothing; this one checks the same promise one layer up, where
workers wait on futures, waits are cancelled, queriers vanish mid-request
and the runtime stops. Every observer event, and every `dequeue` and
`requeue_front` the runtime makes on its queue, lands in one ordered ledger;
the test replays it into a per-request state (queued, handed to a worker
that has not resumed yet, in flight on a worker, or ended one way) and
compares that with the queue after every step. A requeue is only legal
while its worker is being disconnected or its wait cancelled, which is how
"a retry only after the querier vanished" is checked. What `next_request`
returned to each simulated worker is counted too: observers must report a
dispatch exactly as often as a worker really received the request, and
never hand a worker a request after its cancellation was reported. The
ledger, its replay and the comparison live in runtime_ledger.py; the driver
and its operations are here.

Each example runs in its own event loop on a fake clock; the only waiting
is `asyncio.sleep(0)` a bounded number of times.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import NamedTuple

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.errors import TooManyRequests
from scheduler_core.federation import combined_limits
from scheduler_core.model import (
    COMPONENTS,
    PriorityDef,
    QueryPriority,
    QueueConfig,
    Request,
    TenantLimits,
)
from scheduler_core.runtime import SchedulerRuntime
from tests.fakes import FakeClock
from tests.scheduler_core.runtime_ledger import TENANTS, Key, Ledger, Model, check, collect

QUERIERS = ("q0", "q1", "q2")
DEFAULT_CAP = 5
# Actor paths (Loki's hierarchical queues): none, siblings, nested, too deep.
ACTORS: tuple[tuple[str, ...], ...] = ((), ("u1",), ("u2",), ("u1", "x"), ("a", "b", "c", "d"))


class Op(NamedTuple):
    """One step; `a`, `b`, `c` are read per kind, modulo what it picks from."""

    kind: str
    a: int = 0
    b: int = 0
    c: int = 0


# Repeats weight the draw: work arrives, workers ask and the loop turns more
# often than limits or layouts change.
KINDS = (
    ["enqueue"] * 4
    + ["connect"] * 3
    + ["wait"] * 4
    + ["turns"] * 3
    + ["complete"] * 3
    + ["disconnect"] * 2
    + ["cancel_wait", "cancel", "shutdown", "limits", "config", "tick"]
    + ["operator_fail", "operator_fail_tenant"]
)
_param = st.integers(0, 11)
OPS = st.builds(Op, st.sampled_from(KINDS), _param, _param, _param)


async def settle(task: asyncio.Task[Request]) -> None:
    await asyncio.wait({task})


class Driver:
    """Runs one op sequence on one runtime."""

    def __init__(self) -> None:
        self.clock = FakeClock(100.0)
        self.ledger = Ledger()
        config = QueueConfig(max_outstanding_requests_per_tenant=DEFAULT_CAP)
        self.rt = SchedulerRuntime(
            config, clock=self.clock, observer=self.ledger, forget_check_interval=0
        )
        self._watch_queue()
        self.model = Model()
        self.limits: dict[str, TenantLimits] = {}
        self.next_id = 0

    def _watch_queue(self) -> None:
        queue = self.rt.queue
        requeue_front = queue.requeue_front
        dequeue = queue.dequeue

        def requeued(request: Request) -> None:
            self.ledger.on_requeued(request)
            requeue_front(request)

        def handed(querier_id: str, worker_id: int, last: int = -1) -> tuple[Request | None, int]:
            request, index = dequeue(querier_id, worker_id, last)
            if request is not None:
                self.ledger.on_handed(request, (querier_id, worker_id))
            return request, index

        queue.requeue_front = requeued  # type: ignore[method-assign]
        queue.dequeue = handed  # type: ignore[method-assign]

    async def run(self, ops: list[Op]) -> None:
        await self.rt.start()
        check(self.rt, self.model, self.ledger)
        for op in ops:
            await getattr(self, f"do_{op.kind}")(op)
            collect(self.model, self.ledger)
            # A worker told its querier is leaving ends its stream (gRPC does).
            for key in sorted(self.model.done_waiting):
                await self.disconnect(key)
            check(self.rt, self.model, self.ledger)
        await self.finish()

    async def finish(self) -> None:
        model = self.model
        model.stopping = True
        leftovers = await self.rt.stop(drain_timeout=0)
        check(self.rt, model, self.ledger)
        assert not model.queued(), "queued after stop"
        # What was running at the deadline was failed back too, not left on its worker.
        running = [rid for rid, f in model.fates.items() if f.state in ("handed", "flight")]
        assert not running, f"still running after stop: {running}"
        assert all(model.fates[r.id].state == "failed" for r in leftovers)
        # The transports go away: cancel every wait, then drop every worker.
        while model.waits:
            await self.cancel_wait(min(model.waits))
        for key in list(model.workers):
            await self.disconnect(key)
        check(self.rt, model, self.ledger)
        unended = [
            rid for rid, f in model.fates.items() if f.state in ("queued", "handed", "flight")
        ]
        assert not unended, f"never answered: {unended}"

    # -- ops ---------------------------------------------------------------
    async def do_enqueue(self, op: Op) -> None:
        # A federated `a|b` too: its queue (and the limits it derives) comes
        # and goes with its requests, across disconnects and requeues.
        tenant = (*TENANTS, "a|b")[op.a % 4]
        rid = f"r{self.next_id}"
        self.next_id += 1
        request = Request(
            id=rid,
            tenant_id=tenant,
            component=COMPONENTS[op.b % 4],
            priority=op.c % 3,
            actor_path=ACTORS[(op.b + op.c) % len(ACTORS)],
        )
        parts = [self.limits.get(t, TenantLimits()) for t in tenant.split("|")]
        own = combined_limits(parts).max_outstanding
        cap = self.rt.config.max_outstanding_requests_per_tenant if own is None else own
        self.model.replay(self.ledger)
        full = self.model.outstanding(tenant) >= cap
        try:
            self.rt.enqueue(request)
        except TooManyRequests:
            assert full, f"{rid} rejected below the limit {cap}"
            self.model.replay(self.ledger)
            assert rid in self.model.rejected
            return
        assert not full, f"{rid} accepted over the limit {cap}"

    async def do_connect(self, op: Op) -> None:
        self.connect(QUERIERS[op.a % 3])

    def connect(self, querier: str) -> Key | None:
        if sum(1 for q, _ in self.model.workers if q == querier) >= 3:
            return None
        key = (querier, self.rt.connect_querier(querier))
        assert key not in self.model.workers
        self.model.workers.append(key)
        return key

    async def do_wait(self, op: Op) -> None:
        idle = self.model.idle_workers()
        if idle:
            key = idle[op.a % len(idle)]
            self.model.waits[key] = asyncio.create_task(self.rt.next_request(*key))

    async def do_cancel_wait(self, op: Op) -> None:
        if self.model.waits:
            await self.cancel_wait(sorted(self.model.waits)[op.a % len(self.model.waits)])

    async def cancel_wait(self, key: Key) -> None:
        task = self.model.waits[key]
        self.model.withdrawing.add(key)
        task.cancel()
        await settle(task)
        collect(self.model, self.ledger)

    async def do_complete(self, op: Op) -> None:
        """The querier answered: complete (a no-op if cancelled meanwhile)."""
        if not self.model.held:
            return
        key = sorted(self.model.held)[op.a % len(self.model.held)]
        rid = self.model.held.pop(key)
        self.model.replay(self.ledger)
        live = self.model.fates[rid].state == "flight"
        assert (self.rt.complete(rid) is not None) == live, rid

    async def do_cancel(self, op: Op) -> None:
        ids = sorted(self.model.fates)
        if not ids:
            return
        rid = ids[op.a % len(ids)]
        self.model.replay(self.ledger)
        live = self.model.fates[rid].state in ("queued", "handed", "flight")
        assert (self.rt.cancel(rid) is not None) == live, rid

    async def do_operator_fail(self, op: Op) -> None:
        """An operator ends one request, queued or running, as failed."""
        ids = sorted(self.model.fates)
        if not ids:
            return
        rid = ids[op.a % len(ids)]
        self.model.replay(self.ledger)
        live = self.model.fates[rid].state in ("queued", "handed", "flight")
        self.model.operator = True
        failed = self.rt.fail(rid, "cancelled by an operator")
        self.model.replay(self.ledger)
        self.model.operator = False
        assert (failed is not None) == live, rid
        assert failed is None or self.model.fates[rid].state == "failed"

    async def do_operator_fail_tenant(self, op: Op) -> None:
        """An operator fails every queued request of one tenant: exactly those."""
        tenant = TENANTS[op.a % len(TENANTS)]
        self.model.replay(self.ledger)
        expected = {f.request.id for f in self.model.queued() if f.request.tenant_id == tenant}
        self.model.operator = True
        failed = self.rt.fail_matching("cancelled by an operator", tenant=tenant)
        self.model.replay(self.ledger)
        self.model.operator = False
        assert {r.id for r in failed} == expected
        assert all(self.model.fates[rid].state == "failed" for rid in expected)

    async def do_disconnect(self, op: Op) -> None:
        """Drop a worker; half the time its querier reconnects and asks again at once."""
        if not self.model.workers:
            return
        key = self.model.workers[op.a % len(self.model.workers)]
        await self.disconnect(key)
        if op.b % 2:
            again = self.connect(key[0])
            if again is not None:
                self.model.waits[again] = asyncio.create_task(self.rt.next_request(*again))

    async def disconnect(self, key: Key) -> None:
        """As the transports do: stop the worker's wait first, then drop it."""
        if key in self.model.waits:
            await self.cancel_wait(key)
        self.model.replay(self.ledger)
        holding = [rid for rid, f in self.model.fates.items() if f.worker == key]
        self.model.disconnecting.add(key)
        released = self.rt.disconnect_querier_worker(*key)
        assert ([released.id] if released else []) == holding, (key, holding)
        self.model.replay(self.ledger)
        self.model.disconnecting.discard(key)
        self.model.workers.remove(key)
        self.model.held.pop(key, None)
        self.model.done_waiting.discard(key)

    async def do_shutdown(self, op: Op) -> None:
        self.rt.notify_querier_shutdown(QUERIERS[op.a % 3])

    async def do_limits(self, op: Op) -> None:
        """Shards of 0-2 queriers, a tight or default cap, maybe a reservation."""
        tenant = TENANTS[op.a % 3]
        priorities = [PriorityDef(2, 1)] if op.b > 8 else []
        limits = TenantLimits(
            max_queriers=op.b % 3,
            max_outstanding=(None, None, 1, 2, 0)[op.c % 5],
            query_priority=QueryPriority(enabled=bool(priorities), priorities=priorities),
        )
        self.rt.set_tenant_limits(tenant, limits)
        self.limits[tenant] = limits

    async def do_config(self, op: Op) -> None:
        config = replace(
            self.rt.config,
            layout=("tenant-first", "component-first")[op.a % 2],
            component_selection=("round-robin", "querier-worker-priority")[op.b % 2],
            querier_forget_delay=(0.0, 3.0)[op.c % 2],
            max_queue_hierarchy_levels=(3, 1, 0)[op.c % 3],
        )
        self.rt.set_config(config)

    async def do_turns(self, op: Op) -> None:
        for _ in range(1 + op.a % 4):
            await asyncio.sleep(0)

    async def do_tick(self, op: Op) -> None:
        self.clock.now += 1 + op.a % 4
        await asyncio.sleep(0)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(ops=st.lists(OPS, min_size=20, max_size=60))
def test_every_accepted_request_is_answered_once_and_dispatched_at_most_twice(
    ops: list[Op],
) -> None:
    asyncio.run(Driver().run(ops))


def test_a_request_cancelled_before_its_wait_resumed_stays_cancelled() -> None:
    """Found by the property above: the abandoned wait put a cancelled request back."""

    async def scenario() -> None:
        ledger = Ledger()
        runtime = SchedulerRuntime(QueueConfig(), clock=FakeClock(), observer=ledger)
        await runtime.start()
        worker = runtime.connect_querier("q0")
        waiting = asyncio.create_task(runtime.next_request("q0", worker))
        await asyncio.sleep(0)
        runtime.enqueue(Request(id="r0", tenant_id="a"))  # handed to the waiting worker
        assert runtime.cancel("r0") is not None  # its frontend gave up first
        waiting.cancel()  # then the querier's stream closed
        await asyncio.wait({waiting})
        assert len(runtime.queue) == 0
        assert await runtime.stop(drain_timeout=0) == []
        # The worker never got it, so no dispatch was reported.
        assert [kind for kind, _, _ in ledger.events] == ["enqueued", "cancelled"]

    asyncio.run(scenario())
