"""`RequestQueue`: the synchronous multi-tenant queue (no asyncio, no locks).

One owner calls it from one thread or task, as Mimir's dispatcher loop does.
Every request the queue accepted is, at any instant, exactly one of: queued
(in `_queued` and in one leaf), in flight (in `_in_flight`, held by one
worker), or handed back to the caller (completed, cancelled, drained or
released by a disconnect). Counters change in the same call as the contents,
so `len()`, `tenant_length()` and `snapshot()` are always exact.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from scheduler_core.component_selection import QuerierWorkerPriority, TenantComponentSelection
from scheduler_core.errors import (
    DuplicateRequest,
    QuerierShuttingDown,
    TooManyRequests,
    UnknownQuerier,
    WorkerBusy,
)
from scheduler_core.leaf import Leaf, TenantState
from scheduler_core.model import (
    COMPONENTS,
    Layout,
    QueryPriority,
    QueueConfig,
    Request,
    TenantLimits,
)
from scheduler_core.queue_snapshot import build_snapshot
from scheduler_core.round_robin import RoundRobin
from scheduler_core.snapshot import QueueSnapshot
from scheduler_core.tenant_querier_assignment import Shard, TenantQuerierAssignment, WorkerState
from scheduler_core.tenant_rotation import TenantOrder, TenantRotation
from scheduler_core.tree import DequeueContext, Tree

__all__ = ["RequestQueue"]

_LAYOUTS = ("tenant-first", "component-first")
_SELECTIONS = ("round-robin", "querier-worker-priority")
_COMPONENT_SET = frozenset(COMPONENTS)


class RequestQueue:
    """The tree queue with shuffle sharding, reservations and limits."""

    def __init__(
        self, config: QueueConfig | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        config = config if config is not None else QueueConfig()
        _check_config(config)
        self._config = config
        self._clock = clock
        self._order = TenantOrder()
        self._assignment = TenantQuerierAssignment(self._on_reshard)
        self._rotation = TenantRotation(self._order, self._assignment.shard_of)
        self._limits: dict[str, TenantLimits] = {}
        self._priority_enabled: set[str] = set()
        self._tenants: dict[str, TenantState] = {}
        self._queued: dict[str, Request] = {}
        self._in_flight: dict[str, WorkerState] = {}
        self._ctx = DequeueContext()
        self._tree = self._build_tree()

    # -- tree -------------------------------------------------------------
    def _build_tree(self) -> Tree:
        cfg = self._config
        if cfg.layout == "tenant-first":
            tree = Tree(True, self._rotation, TenantComponentSelection(self._priority_enabled))
        elif cfg.component_selection == "querier-worker-priority":
            tree = Tree(False, QuerierWorkerPriority(), self._rotation)
        else:
            tree = Tree(False, RoundRobin(COMPONENTS), self._rotation)
        for state in self._tenants.values():
            for leaf in state.leaves.values():
                tree.attach(leaf)
        return tree

    def _on_reshard(self, tenant_id: str, old: Shard, new: Shard) -> None:
        for node in self._tree.tenant_nodes(tenant_id):
            self._rotation.reshard(node, tenant_id, old, new)

    def _insert(self, request: Request, state: TenantState | None, front: bool) -> None:
        tenant = request.tenant_id
        if state is None:
            state = self._tenants[tenant] = TenantState()
        if not state.queued:
            self._order.acquire(tenant)
        leaf = state.leaves.get(request.component)
        fresh = leaf is None
        if leaf is None:
            leaf = state.leaves[request.component] = Leaf(tenant, request.component)
        if front:
            leaf.push_front(request)
        else:
            leaf.push(request)
        self._queued[request.id] = request
        state.queued += 1
        if fresh:
            self._tree.attach(leaf)

    def _prune(self, leaf: Leaf, state: TenantState) -> None:
        """After a removal: unhang an emptied leaf, free an idle tenant."""
        if not leaf.length:
            self._tree.detach(leaf)
            del state.leaves[leaf.component]
        if not state.queued:
            self._order.release(leaf.tenant_id)
            self._forget_idle(leaf.tenant_id, state)

    def _forget_idle(self, tenant: str, state: TenantState) -> None:
        if not state.queued and not state.in_flight and tenant not in self._limits:
            del self._tenants[tenant]

    def _release(self, worker: WorkerState) -> Request:
        """Free a worker of its in-flight request (already out of `_in_flight`)."""
        request = worker.request
        assert request is not None
        worker.request = None
        worker.since = self._clock()
        state = self._tenants[request.tenant_id]
        state.in_flight -= 1
        if not state.in_flight:
            self._forget_idle(request.tenant_id, state)
        return request

    # -- requests ---------------------------------------------------------
    def enqueue(self, request: Request) -> None:
        """Queue a request at the back of its priority; stamps `enqueued_at`."""
        if request.id in self._queued or request.id in self._in_flight:
            raise DuplicateRequest(request.id)
        if request.component not in _COMPONENT_SET:
            raise ValueError(f"unknown query component {request.component!r}")
        state = self._tenants.get(request.tenant_id)
        if state is not None:
            limit = state.limit
            if limit is None:
                limit = self._config.max_outstanding_requests_per_tenant
            if state.queued + state.in_flight >= limit:
                raise TooManyRequests(request.tenant_id)
            request.enqueued_at = self._clock()
            leaf = state.leaves.get(request.component)
            if leaf is not None:
                # Hot path: the leaf is already in the tree.
                leaf.push(request)
                self._queued[request.id] = request
                state.queued += 1
                return
        elif self._config.max_outstanding_requests_per_tenant <= 0:
            raise TooManyRequests(request.tenant_id)
        request.enqueued_at = self._clock()
        self._insert(request, state, front=False)

    def dequeue(
        self, querier_id: str, worker_id: int, last_tenant_index: int = -1
    ) -> tuple[Request | None, int]:
        """The next request for this worker, now in flight on it, and its tenant index.

        Returns (None, last_tenant_index) when nothing is queued that this
        querier may take.
        """
        querier = self._assignment.queriers.get(querier_id)
        if querier is None:
            raise UnknownQuerier(querier_id)
        if querier.shutting_down:
            raise QuerierShuttingDown(querier_id)
        worker = querier.workers.get(worker_id)
        if worker is None:
            raise UnknownQuerier(f"{querier_id} worker {worker_id}")
        if worker.request is not None:
            raise WorkerBusy(f"{querier_id} worker {worker_id}")
        if not self._queued:
            return None, last_tenant_index
        ctx = self._ctx
        ctx.querier_id = querier_id
        ctx.worker_id = worker_id
        ctx.last_tenant_index = last_tenant_index
        ctx.reserved = self._assignment.reserved_by_querier.get(querier_id)
        ctx.aging = self._config.priority_aging_seconds
        root = self._tree.root
        request = root.algorithm.dequeue(root, ctx)
        if request is None:
            return None, last_tenant_index
        leaf = ctx.leaf
        assert leaf is not None
        del self._queued[request.id]
        state = self._tenants[request.tenant_id]
        state.queued -= 1
        state.in_flight += 1
        if not leaf.length:
            self._prune(leaf, state)
        self._in_flight[request.id] = worker
        worker.request = request
        worker.since = self._clock()
        request.attempts += 1
        return request, ctx.tenant_index

    def complete(self, request_id: str) -> Request | None:
        """The in-flight request is done and its worker idle; None if unknown."""
        worker = self._in_flight.pop(request_id, None)
        return None if worker is None else self._release(worker)

    def cancel(self, request_id: str) -> Request | None:
        """Remove a queued request at once, or release an in-flight one."""
        request = self._queued.pop(request_id, None)
        if request is not None:
            state = self._tenants[request.tenant_id]
            leaf = state.leaves[request.component]
            leaf.remove(request)
            state.queued -= 1
            self._prune(leaf, state)
            return request
        return self.complete(request_id)

    def requeue_front(self, request: Request) -> None:
        """Put a request back at the front of its priority in its leaf.

        Works for an in-flight request (its worker becomes idle) and for one
        already released by a disconnect; never subject to the limit, since
        the request was accepted once already.
        """
        worker = self._in_flight.pop(request.id, None)
        if worker is not None:
            self._release(worker)
        elif request.id in self._queued:
            raise DuplicateRequest(request.id)
        self._insert(request, self._tenants.get(request.tenant_id), front=True)

    def in_flight(self, request_id: str) -> bool:
        return request_id in self._in_flight

    def drain(self) -> list[Request]:
        """Remove and return every queued request (in-flight ones stay)."""
        drained = [
            r
            for state in self._tenants.values()
            for leaf in state.leaves.values()
            for r in leaf.requests()
        ]
        for tenant, state in list(self._tenants.items()):
            state.leaves.clear()
            state.queued = 0
            self._forget_idle(tenant, state)
        self._queued.clear()
        self._order.clear()
        self._tree = self._build_tree()
        return drained

    def __len__(self) -> int:
        return len(self._queued)

    def tenant_length(self, tenant_id: str) -> int:
        state = self._tenants.get(tenant_id)
        return state.queued if state is not None else 0

    # -- queriers ---------------------------------------------------------
    def connect_querier(self, querier_id: str) -> int:
        """Open one worker connection; returns its (lowest free) worker id."""
        return self._assignment.connect(querier_id, self._clock()).worker_id

    def disconnect_querier_worker(self, querier_id: str, worker_id: int) -> Request | None:
        """Close a worker; returns its in-flight request, released, not requeued.

        Unknown ids are ignored (None), so a transport may call it twice.
        """
        querier = self._assignment.queriers.get(querier_id)
        worker = querier.workers.get(worker_id) if querier is not None else None
        if worker is None:
            return None
        request = None
        if worker.request is not None:
            del self._in_flight[worker.request.id]
            request = self._release(worker)
        self._assignment.disconnect(worker, self._clock(), self._config.querier_forget_delay)
        return request

    def notify_querier_shutdown(self, querier_id: str) -> None:
        """Its next dequeue raises QuerierShuttingDown; shards drop it when it leaves."""
        self._assignment.notify_shutdown(querier_id)

    def forget_disconnected_queriers(self) -> list[str]:
        """Forget queriers gone for at least `querier_forget_delay`; their ids."""
        return self._assignment.forget_expired(self._clock(), self._config.querier_forget_delay)

    # -- configuration ----------------------------------------------------
    def set_tenant_limits(self, tenant_id: str, limits: TenantLimits) -> None:
        """Apply at once; queued work is kept even above a lowered limit."""
        self._limits[tenant_id] = limits
        state = self._tenants.get(tenant_id)
        if state is None:
            state = self._tenants[tenant_id] = TenantState()
        state.limit = limits.max_outstanding
        if limits.query_priority.enabled:
            self._priority_enabled.add(tenant_id)
        else:
            self._priority_enabled.discard(tenant_id)
        self._assignment.set_tenant(tenant_id, limits.max_queriers, limits.query_priority)

    def tenant_limits(self, tenant_id: str) -> TenantLimits:
        """The tenant's limits, or the defaults when none were set."""
        return self._limits.get(tenant_id) or _DEFAULT_LIMITS

    def remove_tenant_limits(self, tenant_id: str) -> None:
        self._limits.pop(tenant_id, None)
        state = self._tenants.get(tenant_id)
        if state is not None:
            state.limit = None
            self._forget_idle(tenant_id, state)
        self._priority_enabled.discard(tenant_id)
        self._assignment.set_tenant(tenant_id, 0, QueryPriority())

    def set_config(self, config: QueueConfig) -> None:
        """Apply new settings; a layout or selection change rebuilds the inner nodes."""
        _check_config(config)
        old, self._config = self._config, config
        if (old.layout, old.component_selection) != (config.layout, config.component_selection):
            self._tree = self._build_tree()

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
            limits=self._limits,
            assignment=self._assignment,
            total=len(self._queued),
        )


_DEFAULT_LIMITS = TenantLimits()


def _check_config(config: QueueConfig) -> None:
    if config.layout not in _LAYOUTS:
        raise ValueError(f"unknown layout {config.layout!r}")
    if config.component_selection not in _SELECTIONS:
        raise ValueError(f"unknown component selection {config.component_selection!r}")
