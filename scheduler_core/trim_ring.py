"""The order the traffic sample trims its tenants in: a ring with a cursor.

Over its byte cap, `scheduler_core.traffic.TrafficSample` takes from the
tenants holding more than an equal share, in turn round a ring from where
the last trim stopped, a new tenant joining at the back. A deque rotated
past each tenant looked at did that, but under churn at the cap most
tenants sit under the share, and passing them one by one cost O(tenants)
per recorded request. `TrimRing` keeps the same ring as a treap in ring
order whose nodes know the largest size below them, so finding the next
node over the share, adding, removing and resizing are O(log n).

Imports nothing from the project.
"""

from __future__ import annotations

from typing import Generic, TypeVar, cast

__all__ = ["RingNode", "TrimRing"]


class RingNode:
    """A member of the ring: its key, its size, and its links in the treap."""

    __slots__ = ("key", "left", "parent", "right", "size", "top")

    def __init__(self, key: str, size: int) -> None:
        self.key = key
        self.size = size
        self.top = size  # the largest `size` in this subtree
        self.parent: RingNode | None = None
        self.left: RingNode | None = None
        self.right: RingNode | None = None


N = TypeVar("N", bound=RingNode)


def _top(node: RingNode | None) -> int:
    return node.top if node is not None else 0


def _rank(node: RingNode) -> int:
    """The treap's heap key: the key's hash, keyed per process (SipHash) and
    cached by the string, so random to whoever picks the keys (tenant IDs),
    and the tree is O(log n) deep however they come and go."""
    return hash(node.key)


def _leftmost(node: RingNode) -> RingNode:
    while node.left is not None:
        node = node.left
    return node


def _leftmost_over(node: RingNode, share: int) -> RingNode:
    """The first node above `share` under `node` (whose `top` is above it)."""
    while True:
        left, right = node.left, node.right
        if left is not None and left.top > share:
            node = left
        elif node.size > share:
            return node
        else:
            assert right is not None  # the one above `share` is right of here
            node = right


def _after(node: RingNode) -> RingNode:
    """The next node round the ring."""
    if node.right is not None:
        return _leftmost(node.right)
    while node.parent is not None:
        if node.parent.left is node:
            return node.parent
        node = node.parent
    return _leftmost(node)  # past the last: wrap round to the first


class TrimRing(Generic[N]):
    """The ring the trim walks: what a deque rotated past each node it looks
    at would hold (its head the cursor, a new node joining at the back, just
    before the cursor), as a treap in ring order whose nodes know the
    largest `size` below them. After a node's `size` changes, `resized`
    must be called on it, or `pass_to_over` can pass over a node above the
    share (or stop at none).
    """

    __slots__ = ("_cursor", "_root")

    def __init__(self) -> None:
        self._root: RingNode | None = None
        self._cursor: RingNode | None = None

    def add(self, node: N) -> N:
        """Place `node` (not yet in a ring) last: just before the cursor."""
        cursor = self._cursor
        if cursor is None:
            self._root = self._cursor = node
            return node
        if cursor.left is None:
            cursor.left, node.parent = node, cursor
        else:
            last = cursor.left
            while last.right is not None:
                last = last.right
            last.right, node.parent = node, last
        while node.parent is not None and _rank(node.parent) < _rank(node):
            self._rotate_up(node)
        self.resized(node.parent)
        return node

    def remove(self, node: N) -> None:
        # First the tops above count its size as it is now: the rotations
        # below recompute some of them, and `resized` at the end stops at the
        # first that holds, right only if the ones above it agree.
        self.resized(node)
        if self._cursor is node:
            after = _after(node)
            self._cursor = after if after is not node else None
        while node.left is not None and node.right is not None:
            self._rotate_up(node.left if _rank(node.left) > _rank(node.right) else node.right)
        child = node.left if node.left is not None else node.right
        parent = node.parent
        if child is not None:
            child.parent = parent
        self._replace(parent, node, child)
        node.parent = node.left = node.right = None
        self.resized(parent)

    def pass_to_over(self, share: int) -> N | None:
        """The first node from the cursor on above `share`, the cursor moved
        past it, as the deque's rotation did; None if there is none."""
        root, node = self._root, self._cursor
        if root is None or node is None or root.top <= share:
            return None
        found = None
        if node.size > share:
            found = node
        elif node.right is not None and node.right.top > share:
            found = _leftmost_over(node.right, share)
        while found is None and node.parent is not None:
            parent = node.parent
            if parent.left is node:
                if parent.size > share:
                    found = parent
                elif parent.right is not None and parent.right.top > share:
                    found = _leftmost_over(parent.right, share)
            node = parent
        found = found or _leftmost_over(root, share)  # none after the cursor: wrap round
        self._cursor = _after(found)
        return cast(N, found)  # only `add` puts nodes in, each an N

    @staticmethod
    def resized(node: RingNode | None) -> None:
        """Recompute `top` from `node` up while it changes (`node.size` changed)."""
        while node is not None:
            left, right = node.left, node.right
            top = node.size
            if left is not None and left.top > top:
                top = left.top
            if right is not None and right.top > top:
                top = right.top
            if top == node.top:
                return
            node.top = top
            node = node.parent

    def _rotate_up(self, node: RingNode) -> None:
        parent = node.parent
        assert parent is not None
        if parent.left is node:
            moved, parent.left, node.right = node.right, node.right, parent
        else:
            moved, parent.right, node.left = node.left, node.left, parent
        if moved is not None:
            moved.parent = parent
        self._replace(parent.parent, parent, node)
        node.parent, parent.parent = parent.parent, node
        for changed in (parent, node):
            changed.top = max(changed.size, _top(changed.left), _top(changed.right))

    def _replace(self, parent: RingNode | None, old: RingNode, new: RingNode | None) -> None:
        if parent is None:
            self._root = new
        elif parent.left is old:
            parent.left = new
        else:
            parent.right = new
