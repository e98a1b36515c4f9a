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

from collections.abc import Iterator

from scheduler_core.leaf import Leaf
from scheduler_core.nodes import DequeueContext, Node, QueuingAlgorithm, TenantState

__all__ = ["DequeueContext", "Node", "QueuingAlgorithm", "TenantState", "Tree"]


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
