"""The generic two-level tree queue over leaves, with one algorithm per depth.

`tenant-first` is root -> tenant -> component -> leaf and `component-first`
is root -> component -> tenant -> leaf; the leaves are the same objects in
both, so switching layout rebuilds only the two inner levels and can neither
lose nor reorder a request. Only non-empty leaves are attached and a node is
pruned the moment its last child leaves, so "is there work below" is always
"does the node exist".

A tenant's node is its `TenantState`, the queue's per-tenant record: its
children are the tenant's non-empty leaves by component in both layouts
(maintained by the queue), and in `tenant-first` the record itself hangs at
the root. One object per tenant instead of a node, a record and two dicts,
which is what a dequeue at 100,000 tenants pays for in cache misses.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from scheduler_core.leaf import Leaf
from scheduler_core.model import Request

__all__ = ["DequeueContext", "Node", "QueuingAlgorithm", "TenantState", "Tree"]


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


class Tree:
    """Root, one inner level, and the non-empty leaves below it."""

    __slots__ = ("_inner_algorithm", "root", "tenant_first")

    def __init__(
        self,
        tenant_first: bool,
        root_algorithm: QueuingAlgorithm,
        inner_algorithm: QueuingAlgorithm,
    ) -> None:
        self.tenant_first = tenant_first
        self.root = Node("", root_algorithm)
        self._inner_algorithm = inner_algorithm

    def attach(self, leaf: Leaf, tenant: TenantState) -> None:
        """Hang a leaf that just became non-empty (already in `tenant.children`)."""
        root = self.root
        if self.tenant_first:
            if tenant.key not in root.children:
                tenant.algorithm = self._inner_algorithm
                tenant.state = tenant.algorithm.new_state()
                tenant.algorithm.on_add(tenant, leaf.component)
                root.children[tenant.key] = tenant
                root.algorithm.on_add(root, tenant.key)
            else:
                tenant.algorithm.on_add(tenant, leaf.component)
            return
        component = leaf.component
        node = root.children.get(component)
        if node is None:
            node = Node(component, self._inner_algorithm)
            node.children[tenant.key] = leaf
            node.algorithm.on_add(node, tenant.key)
            root.children[component] = node
            root.algorithm.on_add(root, component)
            return
        assert isinstance(node, Node)
        node.children[tenant.key] = leaf
        node.algorithm.on_add(node, tenant.key)

    def detach(self, leaf: Leaf, tenant: TenantState) -> None:
        """Unhang a leaf that just became empty, pruning its parent if empty.

        In `tenant-first` the caller removes the leaf from `tenant.children`
        first: the tenant node is pruned when it has no leaf left.
        """
        root = self.root
        if self.tenant_first:
            tenant.algorithm.on_remove(tenant, leaf.component)
            if not tenant.children:
                root.algorithm.on_remove(root, tenant.key)
                del root.children[tenant.key]
            return
        node = root.children[leaf.component]
        assert isinstance(node, Node)
        node.algorithm.on_remove(node, tenant.key)
        del node.children[tenant.key]
        if not node.children:
            root.algorithm.on_remove(root, leaf.component)
            del root.children[leaf.component]

    def tenant_nodes(self, tenant_id: str) -> Iterator[Node]:
        """The nodes that rotate over tenants and hold this tenant now."""
        root = self.root
        if self.tenant_first:
            if tenant_id in root.children:
                yield root
            return
        for node in root.children.values():
            assert isinstance(node, Node)
            if tenant_id in node.children:
                yield node

    def leaves(self) -> Iterator[Leaf]:
        for node in self.root.children.values():
            assert isinstance(node, Node)
            for leaf in node.children.values():
                assert isinstance(leaf, Leaf)
                yield leaf
