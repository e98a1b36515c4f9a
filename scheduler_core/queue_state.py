"""The queue's structures and the bookkeeping every `RequestQueue` operation shares.

`RequestQueue` (queue.py) is the public operations; this base holds what
they all keep consistent: the tenant records, the tree for the running
layout (and which fused dequeue path it allows), the id index, the
counters, and the insert/prune/release steps that move a request and its
counters in one go. Split from queue.py only to keep each file readable;
nothing outside the queue uses it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from scheduler_core.actor_path import placed_path
from scheduler_core.component_selection import QuerierWorkerPriority, TenantComponentSelection
from scheduler_core.leaf import Leaf
from scheduler_core.model import (
    COMPONENT_SELECTIONS,
    COMPONENTS,
    LAYOUTS,
    QueryPriority,
    QueueConfig,
    Request,
    TenantLimits,
)
from scheduler_core.round_robin import RoundRobin
from scheduler_core.tenant_querier_assignment import Shard, TenantQuerierAssignment, WorkerState
from scheduler_core.tenant_rotation import TenantOrder, TenantRotation
from scheduler_core.tree import TenantState, Tree

__all__ = ["FAST_NONE", "FAST_QWQP", "FAST_TENANT_FIRST", "QueueState", "check_config"]

# Which fused dequeue path the running layout allows (see RequestQueue.dequeue).
FAST_NONE, FAST_TENANT_FIRST, FAST_QWQP = 0, 1, 2


class QueueState:
    """Everything a `RequestQueue` is made of, kept exact by every operation."""

    def __init__(
        self, config: QueueConfig | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        config = config if config is not None else QueueConfig()
        check_config(config)
        self._config = config
        self._clock = clock
        self._order = TenantOrder()
        self._assignment = TenantQuerierAssignment(self._on_reshard)
        self._limits: dict[str, TenantLimits] = {}
        # Each federated ID with a live queue -> its tenants, so an edit of
        # one tenant's limits reaches it at once (`queue_limits`). Split only
        # when an edit first looks (None until then): made for every new
        # queue, the set of an ID naming 262,000 tenants doubled what its
        # request cost, and most IDs see no edit while they are live.
        self._federated: dict[str, frozenset[str] | None] = {}
        # The tenants whose limits a `limits_batch` under way has changed.
        self._deferred: set[str] | None = None
        self._tenants: dict[str, TenantState] = {}
        self._tenant_selection = TenantComponentSelection()
        # request id -> the queued Request, or the WorkerState holding it in
        # flight: one lookup answers "known?", "queued?" and "where?".
        self._ids: dict[str, Request | WorkerState] = {}
        self._total = 0
        self._queriers = self._assignment.queriers
        self._slots = self._order.slots
        self._rebuild_tree()

    # -- tree -------------------------------------------------------------
    def _rebuild_tree(self) -> None:
        """Build the inner nodes for the layout and hang every leaf again.

        Also picks the fused fast path `dequeue` may take, and caches the
        root's algorithm as a bound method for the generic walk.
        """
        cfg = self._config
        first = cfg.layout == "tenant-first"
        self._rotation = TenantRotation(
            self._order, self._assignment.shard_of, self._tenants, first
        )
        if first:
            tree = Tree(True, self._rotation, self._tenant_selection)
            self._fast = FAST_TENANT_FIRST
        elif cfg.component_selection == "querier-worker-priority":
            tree = Tree(False, QuerierWorkerPriority(), self._rotation)
            self._fast = FAST_QWQP
        else:
            tree = Tree(False, RoundRobin(COMPONENTS), self._rotation)
            self._fast = FAST_NONE
        for state in self._tenants.values():
            for leaf in state.children.values():
                tree.attach(leaf, state)
        self._tree = tree
        self._root = tree.root
        self._root_dequeue = tree.root.algorithm.dequeue

    def _on_reshard(self, tenant_id: str, old: Shard, new: Shard) -> None:
        for node in self._tree.tenant_nodes(tenant_id):
            self._rotation.reshard(node, tenant_id, old, new)

    def _new_state(self, tenant_id: str) -> TenantState:
        state = self._tenants[tenant_id] = TenantState(tenant_id, self._tenant_selection)
        state.cap = self._config.max_outstanding_requests_per_tenant
        if "|" in tenant_id:
            self._federated[tenant_id] = None
        return state

    def _place(self, request: Request) -> None:
        """Cut the actor path to `max_queue_hierarchy_levels`: deeper levels are ignored.

        The request then waits in the sub-queue of its first levels (with 0,
        in the leaf's own queue), rather than failing as in Loki; the cut
        path is kept on the request, so a cancel or a front re-queue finds
        the same sub-queue even if the setting changes meanwhile. The path
        as it arrived is kept too (`Request.sent_actor_path`), set by the
        first cut only: a re-queue under fewer levels cuts the placed path
        again, and the recorder must still see every level that was sent.
        """
        path = request.actor_path
        levels = self._config.max_queue_hierarchy_levels
        if len(path) > levels:
            if request.arrived_actor_path is None:
                request.arrived_actor_path = path
            request.actor_path = placed_path(path, levels)

    def _insert(self, request: Request, state: TenantState | None, front: bool) -> None:
        if request.actor_path:
            self._place(request)
        if state is None:
            state = self._new_state(request.tenant_id)
        if state.outstanding == state.in_flight:
            self._order.acquire(state)
        leaves = state.children
        leaf = leaves.get(request.component)
        fresh = leaf is None
        if leaf is None:
            leaf = leaves[request.component] = Leaf(request.component, state)
            state.only = leaf if len(leaves) == 1 else None
        if front:
            leaf.push_front(request)
        else:
            leaf.push(request)
        self._ids[request.id] = request
        self._total += 1
        state.outstanding += 1
        if fresh:
            self._tree.attach(leaf, state)

    def _prune(self, leaf: Leaf, state: TenantState) -> None:
        """After a removal: unhang an emptied leaf, free an idle tenant."""
        if not leaf.length:
            children = state.children
            del children[leaf.component]
            state.only = next(iter(children.values())) if len(children) == 1 else None
            self._tree.detach(leaf, state)
        if state.outstanding == state.in_flight:
            self._order.release(state)
            self._forget_idle(state)

    def _forget_idle(self, state: TenantState) -> None:
        """Drop a tenant with nothing queued or running, unless configured.

        A federated ID's limits were derived when its request was queued
        (`federation.keep_org_limits`), not configured: they go with it, or
        every distinct `a|b` ever seen would keep its limits, shard and
        reservations for good.
        """
        if state.outstanding:
            return
        key = state.key
        if key not in self._limits:
            del self._tenants[key]
            if self._federated:  # the common case, none: no lookup
                self._federated.pop(key, None)
        elif "|" in key:
            del self._limits[key], self._tenants[key], self._federated[key]
            self._assignment.set_tenant(key, 0, QueryPriority())

    def _release(self, worker: WorkerState, now: float) -> Request:
        """Free a worker of its in-flight request (already out of `_ids`)."""
        request = worker.request
        assert request is not None
        state: TenantState = worker.leaf.owner
        worker.request = None
        worker.since = now
        state.in_flight -= 1
        state.outstanding -= 1
        if not state.outstanding:
            self._forget_idle(state)
        return request


def check_config(config: QueueConfig) -> None:
    if config.layout not in LAYOUTS:
        raise ValueError(f"unknown layout {config.layout!r}")
    if config.component_selection not in COMPONENT_SELECTIONS:
        raise ValueError(f"unknown component selection {config.component_selection!r}")
