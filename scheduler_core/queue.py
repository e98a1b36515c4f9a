"""`RequestQueue`: the synchronous multi-tenant queue (no asyncio, no locks).

One owner calls it from one thread or task, as Mimir's dispatcher loop does.
Every request the queue accepted is, at any instant, exactly one of: queued
(in `_ids` as itself and in one leaf), in flight (in `_ids` as the worker
holding it), or handed back to the caller (completed, cancelled, drained or
released by a disconnect). Counters change in the same call as the contents,
so `len()`, `tenant_length()` and `snapshot()` are always exact.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import replace

from scheduler_core.errors import (
    DuplicateRequest,
    QuerierShuttingDown,
    TooManyRequests,
    UnknownQuerier,
    WorkerBusy,
)
from scheduler_core.federation import keep_org_limits
from scheduler_core.model import (
    COMPONENTS,
    Layout,
    QueueConfig,
    Request,
)
from scheduler_core.queue_counts import QueueCounts, build_counts
from scheduler_core.queue_limits import QueueLimits
from scheduler_core.queue_listing import Predicate, QueueListing
from scheduler_core.queue_snapshot import build_snapshot, tenant_serving
from scheduler_core.queue_state import FAST_QWQP, FAST_TENANT_FIRST, check_config
from scheduler_core.snapshot import QueueSnapshot, TenantServing
from scheduler_core.tenant_querier_assignment import WorkerState
from scheduler_core.tenant_rotation import END
from scheduler_core.tree import TenantState

__all__ = ["RequestQueue"]

_COMPONENT_SET = frozenset(COMPONENTS)


class RequestQueue(QueueLimits):
    """The tree queue with shuffle sharding, reservations and limits."""

    # -- requests ---------------------------------------------------------
    def enqueue(self, request: Request) -> None:
        """Queue a request at the back of its priority; stamps `enqueued_at`."""
        rid = request.id
        ids = self._ids
        if rid in ids:
            raise DuplicateRequest(rid)
        tenant_id = request.tenant_id
        if "|" in tenant_id:
            keep_org_limits(self, tenant_id)
        state = self._tenants.get(tenant_id)
        if state is not None:
            if state.outstanding >= state.cap:
                # A federated queue made just now for this request is dropped again.
                self._forget_idle(state)
                raise TooManyRequests(tenant_id)
            # A one-leaf tenant reaches its leaf without its children dict:
            # one object fewer to fetch when the tenant is cold.
            leaf = state.only
            if leaf is None or leaf.component != request.component:
                leaf = state.children.get(request.component)
            if leaf is not None:
                # Hot path: the leaf is already in the tree (so the component
                # is valid); a single-priority leaf is a bare append.
                request.enqueued_at = self._clock()
                if leaf.plain == request.priority and not request.actor_path:
                    leaf.append(request)
                    leaf.length += 1
                else:
                    if request.actor_path:
                        self._place(request)
                    leaf.push(request)
                ids[rid] = request
                self._total += 1
                state.outstanding += 1
                return
        elif self._config.max_outstanding_requests_per_tenant <= 0:
            raise TooManyRequests(tenant_id)
        if request.component not in _COMPONENT_SET:
            if state is not None:
                self._forget_idle(state)
            raise ValueError(f"unknown query component {request.component!r}")
        request.enqueued_at = self._clock()
        self._insert(request, state, front=False)

    def dequeue(
        self, querier_id: str, worker_id: int, last_tenant_index: int = -1
    ) -> tuple[Request | None, int]:
        """The next request for this worker, now in flight on it, and its tenant index.

        Returns (None, last_tenant_index) when nothing is queued that this
        querier may take.
        """
        querier = self._queriers.get(querier_id)
        if querier is None:
            raise UnknownQuerier(querier_id)
        if querier.shutting_down:
            raise QuerierShuttingDown(querier_id)
        worker = querier.workers.get(worker_id)
        if worker is None:
            raise UnknownQuerier(f"{querier_id} worker {worker_id}")
        if worker.request is not None:
            raise WorkerBusy(f"{querier_id} worker {worker_id}")
        reserved = querier.reserved
        request: Request | None = None
        fast = self._fast
        if fast and not reserved:
            # The tree's walk, fused for the common case: no reservation for
            # this querier, no sharded tenant under the node, few busy
            # tenants (a sorted list) and a plain leaf at the next one. Its
            # outcome is the generic walk's; anything else takes that walk,
            # and nothing is changed here unless this path serves.
            node = self._root
            if fast == FAST_QWQP:
                present = node.state
                if not present:
                    return None, last_tenant_index
                node = present[worker_id % len(present)]
            rotation = node.state
            small = rotation.small
            if small is not None and not rotation.by_querier:
                cand = small[bisect_left(small, last_tenant_index + 1)]
                if cand == END:
                    cand = small[0]  # wrap around
                if cand != END:
                    tenant = self._slots[cand]
                    if fast == FAST_TENANT_FIRST:
                        leaf = tenant.only
                        if leaf is not None and leaf.plain is not None:
                            request = leaf.popleft()
                            tenant.state = leaf.after
                    else:
                        leaf = tenant.only
                        if leaf is None or leaf.component != node.key:
                            leaf = tenant.children[node.key]
                        if leaf.plain is not None:
                            request = leaf.popleft()
        if request is None:
            worker.last_tenant_index = last_tenant_index
            worker.reserved = reserved
            request = self._root_dequeue(self._root, worker)
            if request is None:
                return None, last_tenant_index
            leaf = worker.leaf
            tenant = leaf.owner
            cand = worker.tenant_index
        else:
            leaf.length -= 1
            worker.leaf = leaf
        self._ids[request.id] = worker
        self._total -= 1
        tenant.in_flight += 1
        if not leaf.length:
            self._prune(leaf, tenant)
        worker.request = request
        worker.since = request.dispatched_at = self._clock()
        request.attempts += 1
        return request, cand

    def complete(self, request_id: str) -> Request | None:
        """The in-flight request is done and its worker idle; None if unknown."""
        ids = self._ids
        worker = ids.get(request_id)
        if type(worker) is not WorkerState:
            return None
        del ids[request_id]
        # _release, inlined: this runs once per request.
        request = worker.request
        assert request is not None
        state: TenantState = worker.leaf.owner
        worker.request = None
        worker.since = self._clock()
        state.in_flight -= 1
        state.outstanding -= 1
        if not state.outstanding:
            self._forget_idle(state)
        return request

    def cancel(self, request_id: str) -> Request | None:
        """Remove a queued request at once, or release an in-flight one."""
        held = self._ids.get(request_id)
        if type(held) is WorkerState:
            del self._ids[request_id]
            return self._release(held, self._clock())
        if held is None:
            return None
        assert isinstance(held, Request)
        del self._ids[request_id]
        self._total -= 1
        state = self._tenants[held.tenant_id]
        leaf = state.children[held.component]
        leaf.remove(held)
        state.outstanding -= 1
        self._prune(leaf, state)
        return held

    def requeue_front(self, request: Request) -> None:
        """Put a request back at the front of its priority in its leaf.

        Works for an in-flight request (its worker becomes idle) and for one
        already released by a disconnect; never subject to the limit, since
        the request was accepted once already.
        """
        held = self._ids.get(request.id)
        if type(held) is WorkerState:
            del self._ids[request.id]
            self._release(held, self._clock())
        elif held is not None:
            raise DuplicateRequest(request.id)
        request.dispatched_at = None  # waiting again: no run of it is going on
        tenant_id = request.tenant_id
        if "|" in tenant_id:
            # Its release just dropped the federated queue's limits with the
            # idle queue: without this it would wait unsharded, under defaults.
            keep_org_limits(self, tenant_id)
        self._insert(request, self._tenants.get(tenant_id), front=True)

    def in_flight(self, request_id: str) -> bool:
        return type(self._ids.get(request_id)) is WorkerState

    def in_flight_on(self, request_id: str, querier_id: str, worker_id: int) -> bool:
        """Whether this worker holds the request: not another one it was retried on."""
        held = self._ids.get(request_id)
        return (
            type(held) is WorkerState
            and held.worker_id == worker_id
            and held.querier_id == querier_id
        )

    def drain(self) -> list[Request]:
        """Remove and return every queued request (in-flight ones stay)."""
        drained = [
            r
            for state in self._tenants.values()
            for leaf in state.children.values()
            for r in leaf.requests()
        ]
        ids = self._ids
        for request in drained:
            del ids[request.id]
        self._total = 0
        self._order.clear()
        for state in self._tenants.values():
            state.children.clear()
            state.only = None
            state.outstanding = state.in_flight
        self._rebuild_tree()
        # Only now: forgetting a federated queue reshards it, which must not
        # find it in the tree nodes of before the drain.
        for state in list(self._tenants.values()):
            self._forget_idle(state)
        return drained

    def in_flight_count(self) -> int:
        """Requests on a worker now: every id known is either queued or in flight."""
        return len(self._ids) - self._total

    def in_flight_requests(self) -> list[Request]:
        """Every request on a worker now (still in flight: nothing is released)."""
        return [
            held.request
            for held in self._ids.values()
            if type(held) is WorkerState and held.request is not None
        ]

    def __len__(self) -> int:
        return self._total

    def tenant_length(self, tenant_id: str) -> int:
        state = self._tenants.get(tenant_id)
        return state.queued if state is not None else 0

    # -- queriers ---------------------------------------------------------
    def connect_querier(self, querier_id: str) -> int:
        """Open one worker connection; returns its (lowest free) worker id."""
        worker = self._assignment.connect(querier_id, self._clock())
        worker.aging = self._config.priority_aging_seconds
        return worker.worker_id

    def disconnect_querier_worker(self, querier_id: str, worker_id: int) -> Request | None:
        """Close a worker; returns its in-flight request, released, not requeued.

        Unknown ids are ignored (None), so a transport may call it twice.
        """
        querier = self._assignment.queriers.get(querier_id)
        worker = querier.workers.get(worker_id) if querier is not None else None
        if worker is None:
            return None
        request = None
        now = self._clock()
        if worker.request is not None:
            del self._ids[worker.request.id]
            request = self._release(worker, now)
        self._assignment.disconnect(worker, now, self._config.querier_forget_delay)
        return request

    def notify_querier_shutdown(self, querier_id: str) -> None:
        """Its next dequeue raises QuerierShuttingDown; shards drop it when it leaves."""
        self._assignment.notify_shutdown(querier_id)

    def forget_disconnected_queriers(self) -> list[str]:
        """Forget queriers gone for at least `querier_forget_delay`; their ids."""
        return self._assignment.forget_expired(self._clock(), self._config.querier_forget_delay)

    # -- configuration ----------------------------------------------------
    def set_config(self, config: QueueConfig) -> None:
        """Apply new settings; a layout or selection change rebuilds the inner nodes."""
        check_config(config)
        old, self._config = self._config, config
        for tenant_id, state in self._tenants.items():
            state.cap = self._config.outstanding_limit(self._limits.get(tenant_id))
        for querier in self._queriers.values():
            for worker in querier.workers.values():
                worker.aging = config.priority_aging_seconds
        if (old.layout, old.component_selection) != (config.layout, config.component_selection):
            self._rebuild_tree()

    def set_layout(self, layout: Layout) -> None:
        self.set_config(replace(self._config, layout=layout))

    @property
    def config(self) -> QueueConfig:
        return self._config

    def snapshot(self) -> QueueSnapshot:
        """An immutable view built from counters, without walking requests."""
        return build_snapshot(
            taken_at=self._clock(),
            config=self._config,
            tenants=self._tenants,
            assignment=self._assignment,
            total=self._total,
        )

    def serving(self, tenant_id: str) -> TenantServing:
        """Which queriers may serve `tenant_id` now: the snapshot's row, alone."""
        return tenant_serving(self._assignment, tenant_id)

    def idle_workers(self, querier_ids: Iterable[str]) -> tuple[int, int]:
        """(idle, connected) worker connections of these queriers, now."""
        return self._assignment.idle_workers(querier_ids)

    def counts(self) -> QueueCounts:
        """The snapshot's counts alone, far cheaper: what a metrics scrape reads."""
        return build_counts(
            taken_at=self._clock(),
            tenants=self._tenants,
            assignment=self._assignment,
            total=self._total,
        )

    def listing(self) -> QueueListing:
        """Read access to the queued and in-flight requests (`queue_listing`), per use."""
        return QueueListing(
            config=self._config,
            tenants=self._tenants,
            slots=self._slots,
            root=self._root,
            ids=self._ids,
            queriers=self._queriers,
            total=self._total,
        )

    def cancel_matching(
        self,
        *,
        tenant: str | None = None,
        component: str | None = None,
        priority: int | None = None,
        predicate: Predicate | None = None,
    ) -> list[Request]:
        """Remove every queued request under the node that matches; returns exactly those."""
        matched = self.listing().matching(
            tenant=tenant, component=component, priority=priority, predicate=predicate
        )
        for request in matched:
            self.cancel(request.id)
        return matched
