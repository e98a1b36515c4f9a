"""Round-robin over a fixed order of child keys (the query components).

The pointer is an index into the fixed key order, not into the present
children, so a child that empties and comes back keeps its turn and pruning
never shifts anyone else's.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler_core.model import COMPONENTS, Request
from scheduler_core.nodes import DequeueContext, Node

__all__ = ["RoundRobin"]


class RoundRobin:
    """Try children from the one after the last served, in `keys` order.

    A child with nothing this querier may take is passed over, so the
    pointer only moves when something was actually served.
    """

    __slots__ = ("_after", "keys")

    def __init__(self, keys: Sequence[str] = COMPONENTS) -> None:
        self.keys = tuple(keys)
        # key -> the pointer value after serving it
        self._after = {key: (i + 1) % len(self.keys) for i, key in enumerate(self.keys)}

    def new_state(self) -> int:
        return 0

    def on_add(self, node: Node, key: str) -> None:
        """Nothing to do: the pointer indexes the fixed key order."""

    def on_remove(self, node: Node, key: str) -> None:
        """Nothing to do: the pointer indexes the fixed key order."""

    def dequeue(self, node: Node, ctx: DequeueContext) -> Request | None:
        children = node.children
        if len(children) == 1:
            # Common case: one child, so no order to walk.
            for key, only in children.items():
                request: Request | None = only.dequeue(ctx)
                if request is not None:
                    node.state = self._after[key]
                return request
        keys = self.keys
        n = len(keys)
        start: int = node.state
        for step in range(n):
            j = start + step
            if j >= n:
                j -= n
            child = children.get(keys[j])
            if child is None:
                continue
            request = child.dequeue(ctx)
            if request is not None:
                node.state = j + 1 if j + 1 < n else 0
                return request
        return None
