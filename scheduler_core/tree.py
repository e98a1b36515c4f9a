"""The generic two-level tree queue over leaves, with one algorithm per depth.

`tenant-first` is root -> tenant -> component -> leaf and `component-first`
is root -> component -> tenant -> leaf; the leaves are the same objects in
both, so switching layout rebuilds only the two inner levels and can neither
lose nor reorder a request. Only non-empty leaves are attached and a node is
pruned the moment its last child leaves, so "is there work below" is always
"does the node exist".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from scheduler_core.leaf import Leaf
from scheduler_core.model import Request

__all__ = ["DequeueContext", "Node", "QueuingAlgorithm", "Tree"]


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
        self.leaf: Leaf | None = None


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
        self.children: dict[str, Node | Leaf] = {}
        self.state: Any = algorithm.new_state()

    def dequeue(self, ctx: DequeueContext) -> Request | None:
        return self.algorithm.dequeue(self, ctx)


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

    def _path(self, leaf: Leaf) -> tuple[str, str]:
        if self.tenant_first:
            return leaf.tenant_id, leaf.component
        return leaf.component, leaf.tenant_id

    def attach(self, leaf: Leaf) -> None:
        """Hang a leaf that just became non-empty."""
        outer, inner = self._path(leaf)
        root = self.root
        node = root.children.get(outer)
        if node is None:
            node = Node(outer, self._inner_algorithm)
            node.children[inner] = leaf
            node.algorithm.on_add(node, inner)
            root.children[outer] = node
            root.algorithm.on_add(root, outer)
            return
        assert isinstance(node, Node)
        node.children[inner] = leaf
        node.algorithm.on_add(node, inner)

    def detach(self, leaf: Leaf) -> None:
        """Unhang a leaf that just became empty, pruning its parent if empty."""
        outer, inner = self._path(leaf)
        root = self.root
        node = root.children[outer]
        assert isinstance(node, Node)
        node.algorithm.on_remove(node, inner)
        del node.children[inner]
        if not node.children:
            root.algorithm.on_remove(root, outer)
            del root.children[outer]

    def dequeue(self, ctx: DequeueContext) -> Request | None:
        return self.root.algorithm.dequeue(self.root, ctx)

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
