"""The tree's inner nodes, a tenant's node, and the context one dequeue threads down.

Apart from `tree.py` so that leaves, the per-depth algorithms and the tree
can all name these types without importing one another: a `Node`'s
children are nodes or leaves by depth, typed loosely (`Any`) for the hot
path, so nothing here needs `leaf`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from scheduler_core.model import Request

__all__ = ["DequeueContext", "Node", "QueuingAlgorithm", "TenantState"]


class DequeueContext:
    """One dequeue's inputs and outputs, threaded down the tree.

    Reused by the queue across calls to avoid an allocation per dequeue.
    `min_priority` is set by the tenant rotation for the tenant it tries
    (a reserved querier's floor there) and read by the leaves.
    """

    __slots__ = (
        "aging",
        "last_tenant_index",
        "leaf",
        "min_priority",
        "querier_id",
        "reserved",
        "tenant_index",
        "worker_id",
    )

    def __init__(self) -> None:
        self.querier_id = ""
        self.worker_id = 0
        self.last_tenant_index = -1
        self.reserved: Mapping[str, int] | None = None
        self.min_priority: int | None = None
        self.aging = 0.0
        self.tenant_index = -1
        # The leaf served from; Any because it is read once per dequeue on
        # the hot path, where a None check would cost for nothing.
        self.leaf: Any = None


class QueuingAlgorithm(Protocol):
    """How the nodes of one depth choose among their children."""

    def new_state(self) -> Any: ...

    def on_add(self, node: Node, key: str) -> None: ...

    def on_remove(self, node: Node, key: str) -> None: ...

    def dequeue(self, node: Node, ctx: DequeueContext) -> Request | None: ...


class Node:
    """An inner node; `state` belongs to the algorithm of its depth."""

    __slots__ = ("algorithm", "children", "key", "state")

    def __init__(self, key: str, algorithm: QueuingAlgorithm) -> None:
        self.key = key
        self.algorithm = algorithm
        # Any: Node or Leaf by depth; typed loosely so hot paths skip casts.
        self.children: dict[str, Any] = {}
        self.state: Any = algorithm.new_state()

    def dequeue(self, ctx: DequeueContext) -> Request | None:
        return self.algorithm.dequeue(self, ctx)


class TenantState(Node):
    """One tenant: its leaves (`children`), counters and tree position.

    Lives while the tenant has queued or in-flight work or explicit limits.
    `slot` is its place in the shared tenant order while it has queued work
    (-1 otherwise); `cap` is its outstanding limit in force (its explicit
    max_outstanding, else the queue-wide default, kept current by the queue)
    and `outstanding` its queued plus in-flight requests, so the limit check
    is one comparison and a dequeue moves one counter (queued is derived);
    `priority_enabled` mirrors its query_priority flag.
    `only` is its sole leaf while it has exactly one, else None (kept by the
    queue, which alone changes `children`): a one-leaf tenant is the common
    case, and any component selection over one leaf serves that leaf, so the
    rotation pops it directly instead of calling the selection.
    """

    __slots__ = ("cap", "in_flight", "only", "outstanding", "priority_enabled", "slot")

    def __init__(self, tenant_id: str, algorithm: QueuingAlgorithm) -> None:
        self.key = tenant_id
        self.algorithm = algorithm
        self.children: dict[str, Any] = {}
        self.state: Any = 0
        self.outstanding = 0
        self.in_flight = 0
        self.cap = 0
        self.priority_enabled = False
        self.slot = -1
        self.only: Any = None

    @property
    def queued(self) -> int:
        return self.outstanding - self.in_flight
