"""How a node chooses among query-component children.

`QuerierWorkerPriority` is Mimir's querier-worker queue priority for the
component-first root: of the n components present, in `COMPONENTS` order,
worker w starts at the (w % n)-th, so the workers split evenly over the
components that hold work and a slow component cannot occupy every worker.
It moves on to the next present component when the preferred one holds
nothing this querier may take (for example only tenants outside its
shard), so a worker never idles while it could serve; Mimir's current code
does so too (the Mimir it was first compared with did not). One difference
stays: the order here is fixed, where Mimir's is the order the component
nodes were created in, which shifts as they empty and come back. So with
4 workers and 3 components, 2 workers here always start at ingester; in
Mimir which component gets the second worker changes over time.

`TenantComponentSelection` is the tenant-first middle level: plain
round-robin, or, for a tenant with priority enabled, the component whose
next request has the highest priority (rank, with aging), ties round-robin.
"""

from __future__ import annotations

from typing import Any

from scheduler_core.model import COMPONENTS, Request
from scheduler_core.nodes import DequeueContext, Node
from scheduler_core.round_robin import RoundRobin

__all__ = ["QuerierWorkerPriority", "TenantComponentSelection"]


class QuerierWorkerPriority:
    """Worker w prefers the (w % n)-th of the n present components.

    The node's state is the tuple of present component nodes in `COMPONENTS`
    order, kept in step with the children so a dequeue never probes absent
    components and every replica maps workers the same way.
    """

    __slots__ = ()

    def new_state(self) -> tuple[Node, ...]:
        return ()

    def on_add(self, node: Node, key: str) -> None:
        children = node.children
        node.state = tuple(children[c] for c in COMPONENTS if c in children)

    def on_remove(self, node: Node, key: str) -> None:
        children = node.children
        node.state = tuple(children[c] for c in COMPONENTS if c != key and c in children)

    def dequeue(self, node: Node, ctx: DequeueContext) -> Request | None:
        present: tuple[Node, ...] = node.state
        if not present:
            return None
        n = len(present)
        j = ctx.worker_id % n
        child = present[j]
        request = child.algorithm.dequeue(child, ctx)
        if request is not None or n == 1:
            return request
        # The preferred component had nothing for this querier: the others in turn.
        for _ in range(n - 1):
            j = j + 1 if j + 1 < n else 0
            child = present[j]
            request = child.algorithm.dequeue(child, ctx)
            if request is not None:
                return request
        return None


class TenantComponentSelection(RoundRobin):
    """Round-robin over a tenant's components, or highest head first.

    The node is the tenant's `TenantState`; its `priority_enabled` flag is
    live, so switching query_priority needs no tree rebuild.
    """

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(COMPONENTS)

    def dequeue(self, node: Any, ctx: DequeueContext) -> Request | None:
        children = node.children
        if not node.priority_enabled:
            if len(children) == 1:
                # Common case inlined: one leaf, no order to walk.
                for key, only in children.items():
                    floor = ctx.min_priority
                    if only.queues is not None or only.dead is not None:
                        request: Request | None = only.dequeue(ctx)
                    elif floor is not None and only.prio < floor:
                        return None
                    else:
                        # Leaf.dequeue's single-priority path, inlined.
                        ctx.leaf = only
                        request = only.popleft()
                        only.length -= 1
                    if request is not None:
                        node.state = self._after[key]
                    return request
            return super().dequeue(node, ctx)
        keys = self.keys
        n = len(keys)
        start: int = node.state
        best = -1
        best_rank = 0.0
        for step in range(n):
            j = start + step
            if j >= n:
                j -= n
            child = children.get(keys[j])
            if child is None:
                continue
            rank = child.head_rank(ctx.min_priority, ctx.aging)
            # Strictly greater: among equal heads the first after the
            # pointer wins, which is round-robin on ties.
            if rank is not None and (best < 0 or rank > best_rank):
                best, best_rank = j, rank
        if best < 0:
            return None
        node.state = best + 1 if best + 1 < n else 0
        return children[keys[best]].dequeue(ctx)  # type: ignore[no-any-return]
