"""The ledger behind test_runtime_properties.py: what the runtime reported, replayed.

`Ledger` is the observer that records every event (and the queue's
`dequeue`/`requeue_front`, as "handed"/"requeued"); `Model` replays it into
one `Fate` per request, asserting that each transition is legal; `check`
compares the replayed state with the queue and its snapshot, and `collect`
hands finished waits to the simulated transports first.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from scheduler_core.errors import QuerierShuttingDown, UnknownQuerier
from scheduler_core.model import Request
from scheduler_core.runtime import MAX_ATTEMPTS, SchedulerRuntime

# The tenants the driver enqueues for; `check` compares each one's length.
TENANTS = ("a", "b", "c")

Key = tuple[str, int]  # (querier id, worker id)


class Ledger:
    """The observer: records, never asserts (the runtime swallows observer errors)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Request, Any]] = []

    def on_enqueued(self, req: Request) -> None:
        self.events.append(("enqueued", req, None))

    def on_rejected(self, req: Request, reason: str) -> None:
        self.events.append(("rejected", req, reason))

    def on_dispatched(self, req: Request, querier_id: str, worker_id: int, wait: float) -> None:
        self.events.append(("dispatched", req, (querier_id, worker_id)))

    def on_completed(self, req: Request) -> None:
        self.events.append(("completed", req, None))

    def on_cancelled(self, req: Request) -> None:
        self.events.append(("cancelled", req, None))

    def on_failed(self, req: Request, reason: str) -> None:
        self.events.append(("failed", req, reason))

    def on_requeued(self, req: Request) -> None:
        self.events.append(("requeued", req, None))

    def on_handed(self, req: Request, key: Key) -> None:
        self.events.append(("handed", req, key))


@dataclass
class Fate:
    """What the ledger says about one accepted request."""

    request: Request
    # queued | handed (in flight in the queue, not yet reported) | flight
    # (reported dispatched) | completed | cancelled | failed
    state: str = "queued"
    worker: Key | None = None
    handoffs: int = 0  # dequeues onto a worker
    dispatches: int = 0  # on_dispatched reports
    received: int = 0  # times next_request returned it to a worker
    # hand-offs undone before the worker resumed (its wait cancelled, or its
    # worker disconnected): the request never reached a querier
    withdrawn: int = 0
    retries: int = 0


@dataclass
class Model:
    """The ledger replayed, plus what the simulated transports hold."""

    fates: dict[str, Fate] = field(default_factory=dict)
    rejected: set[str] = field(default_factory=set)
    cursor: int = 0
    disconnecting: set[Key] = field(default_factory=set)
    withdrawing: set[Key] = field(default_factory=set)
    stopping: bool = False
    workers: list[Key] = field(default_factory=list)
    waits: dict[Key, asyncio.Task[Request]] = field(default_factory=dict)
    held: dict[Key, str] = field(default_factory=dict)  # transport got it, not answered yet
    done_waiting: set[Key] = field(default_factory=set)  # told its querier is leaving
    operator: bool = False  # an operator is failing requests (runtime.fail)

    def replay(self, ledger: Ledger) -> None:
        for kind, req, arg in ledger.events[self.cursor :]:
            self.apply(kind, req, arg)
        self.cursor = len(ledger.events)

    def apply(self, kind: str, req: Request, arg: Any) -> None:
        rid = req.id
        assert rid not in self.rejected, f"{rid} was rejected, then {kind}"
        if kind == "enqueued":
            assert rid not in self.fates, f"{rid} enqueued twice"
            self.fates[rid] = Fate(req)
            return
        if kind == "rejected":
            assert rid not in self.fates, f"{rid} was queued, then rejected"
            self.rejected.add(rid)
            return
        fate = self.fates[rid]
        if kind == "handed":
            assert fate.state == "queued", f"{rid} handed while {fate.state}"
            fate.state, fate.worker = "handed", arg
            fate.handoffs += 1
        elif kind == "dispatched":
            assert fate.state == "handed", f"{rid} dispatched while {fate.state}"
            assert fate.worker == arg, f"{rid} handed to {fate.worker}, reported on {arg}"
            fate.state = "flight"
            fate.dispatches += 1
        elif kind == "requeued":
            assert fate.state in ("handed", "flight"), f"{rid} requeued while {fate.state}"
            if fate.worker in self.disconnecting:
                if fate.state == "handed":
                    fate.withdrawn += 1
                else:
                    fate.retries += 1
            else:
                # Only a wait cancelled before it resumed gives its hand-off back.
                assert fate.state == "handed", f"{rid} requeued after it was reported"
                assert fate.worker in self.withdrawing, f"{rid} requeued, its worker stayed"
                fate.withdrawn += 1
            fate.state, fate.worker = "queued", None
        else:
            live = ("queued", "handed", "flight")
            assert fate.state in live, f"{rid} {kind} after {fate.state}"
            if kind == "completed":
                assert fate.state == "flight", f"{rid} completed while {fate.state}"
            if kind == "failed" and not self.operator:
                if fate.state == "queued":
                    assert self.stopping, f"{rid} failed while queued, before stop"
                else:
                    # A stop fails what is still running at its deadline too.
                    live_worker = fate.worker not in self.disconnecting
                    assert not live_worker or self.stopping, f"{rid} failed on a live worker"
                if fate.state == "handed":
                    # Only a stop fails a request its worker never received.
                    assert self.stopping, f"{rid} failed before it reached a querier"
                    fate.withdrawn += 1
            fate.state, fate.worker = kind, None

    def queued(self) -> list[Fate]:
        return [f for f in self.fates.values() if f.state == "queued"]

    def outstanding(self, tenant: str) -> int:
        live = ("queued", "handed", "flight")
        return sum(
            1 for f in self.fates.values() if f.state in live and f.request.tenant_id == tenant
        )

    def idle_workers(self) -> list[Key]:
        busy = set(self.waits) | set(self.held) | self.done_waiting
        return [k for k in self.workers if k not in busy]


def check(runtime: SchedulerRuntime, model: Model, ledger: Ledger) -> None:
    """Collect finished waits, then compare the replayed ledger with the queue itself."""
    collect(model, ledger)
    queue = runtime.queue
    queued = model.queued()
    for rid, fate in model.fates.items():
        on_worker = fate.state in ("handed", "flight")
        assert queue.in_flight(rid) == on_worker, (rid, fate.state)
        # A run's start is stamped while it holds a worker, and only then
        # once it waits again (the querier time per tenant counts from it).
        if on_worker or fate.state == "queued":
            running = fate.request.dispatched_at is not None
            assert running == on_worker, (rid, fate.state)
        if on_worker:
            assert fate.worker is not None
            assert queue.in_flight_on(rid, *fate.worker), (rid, fate.worker)
        # Every finished wait was collected, so no report may run ahead of
        # or behind what the workers really got.
        assert fate.dispatches == fate.received, (rid, fate.dispatches, fate.received)
        assert fate.received <= MAX_ATTEMPTS, f"{rid} reached queriers {fate.received} times"
        assert fate.retries <= 1, f"{rid} went back to the queue after {fate.retries} disconnects"
        spent = fate.handoffs - fate.withdrawn
        assert fate.request.attempts == spent, (rid, fate.request.attempts, spent)
    assert len(queue) == len(queued)
    per_tenant = Counter(f.request.tenant_id for f in queued)
    for tenant in TENANTS:
        assert queue.tenant_length(tenant) == per_tenant[tenant], tenant
    snap = runtime.snapshot()
    assert snap.total == len(queued)
    assert {t.tenant_id: t.length for t in snap.tenants if t.length} == dict(per_tenant)
    leaves = Counter((f.request.tenant_id, f.request.component) for f in queued)
    assert {(s.tenant_id, s.component): s.length for s in snap.leaves} == dict(leaves)
    busy = {
        w.request_id: (w.querier_id, w.worker_id)
        for q in snap.queriers
        for w in q.workers
        if w.request_id is not None
    }
    assert busy == {rid: f.worker for rid, f in model.fates.items() if f.worker is not None}
    for key, rid in model.held.items():
        fate = model.fates[rid]
        assert fate.worker == key or fate.state not in ("queued", "handed", "flight"), (key, rid)


def collect(model: Model, ledger: Ledger) -> None:
    """Hand finished waits to their transports, as a querier loop would."""
    model.replay(ledger)
    for key, task in list(model.waits.items()):
        if not task.done():
            continue
        del model.waits[key]
        model.withdrawing.discard(key)
        if task.cancelled():
            # A withdrawn dispatch went back to the queue; nothing may stay on the worker.
            assert all(f.worker != key for f in model.fates.values()), key
            continue
        exc = task.exception()
        if exc is not None:
            assert isinstance(exc, QuerierShuttingDown | UnknownQuerier), repr(exc)
            model.done_waiting.add(key)
            continue
        fate = model.fates[task.result().id]
        if fate.state == "failed" and model.stopping:
            # Reported dispatched, then the stop failed it before the
            # transport looked: the worker got it; its result will be dropped.
            fate.received += 1
            continue
        # Reported on this worker, so neither cancelled nor released since.
        assert fate.state == "flight", f"{fate.request.id} returned while {fate.state}"
        assert fate.worker == key, (fate.request.id, fate.worker, key)
        fate.received += 1
        model.held[key] = fate.request.id
