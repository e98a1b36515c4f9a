"""The plain model test_queue_properties.py checks `RequestQueue` against.

`ModelNode` is a list-based rendering of Loki's round-robin actor tree (a
FIFO while no actor path is in play); `QueueModelMachine` holds the queue
under test beside the model's state (one tree per tenant, component and
priority, the requests in flight, the connected workers, the limits) and
the from-scratch answers the rules compare with: outstanding counts, and
which priorities a querier may take, from the public `shuffle_shard` /
`reserved_queriers`. The rules and invariants live in the test module.
"""

from __future__ import annotations

from collections import Counter

from hypothesis.stateful import RuleBasedStateMachine

from scheduler_core.model import QueueConfig, Request, TenantLimits
from scheduler_core.queue import RequestQueue
from scheduler_core.tenant_querier_assignment import reserved_queriers, shuffle_shard

DEFAULT_LIMIT = 6

Key = tuple[str, str, int]
Path = tuple[str, ...]
LOCAL = None  # a node's own FIFO, in its turn order beside the children's names


class ModelNode:
    """One actor sub-queue: its local FIFO and the turn order of its entries."""

    def __init__(self) -> None:
        self.local: list[str] = []
        self.order: list[str | None] = []  # LOCAL and child names, next turn first
        self.children: dict[str, ModelNode] = {}

    def ids(self) -> list[str]:
        return self.local + [rid for c in self.children.values() for rid in c.ids()]

    def add(self, rid: str, path: Path, front: bool) -> None:
        node = self
        for name in path:
            if name not in node.children:
                node.children[name] = ModelNode()
                node.order.append(name)
            if front:
                node.order.remove(name)
                node.order.insert(0, name)
            node = node.children[name]
        if not node.local:
            node.order.append(LOCAL)
        if front:
            node.local.insert(0, rid)
            node.order.remove(LOCAL)
            node.order.insert(0, LOCAL)
        else:
            node.local.append(rid)

    def head(self) -> str:
        key = self.order[0]
        return self.local[0] if key is LOCAL else self.children[key].head()

    def pop(self) -> str:
        key = self.order.pop(0)
        if key is LOCAL:
            rid = self.local.pop(0)
            if self.local:
                self.order.append(LOCAL)
            return rid
        child = self.children[key]
        rid = child.pop()
        if child.ids():
            self.order.append(key)
        else:
            del self.children[key]
        return rid

    def remove(self, rid: str, path: Path) -> None:
        trail = []
        node = self
        for name in path:
            trail.append((node, name))
            node = node.children[name]
        node.local.remove(rid)
        if not node.local:
            node.order.remove(LOCAL)
        for parent, name in reversed(trail):
            if parent.children[name].ids():
                break
            del parent.children[name]
            parent.order.remove(name)

    def counts(self, path: Path, out: Counter[Path]) -> None:
        for name, child in self.children.items():
            sub = (*path, name)
            out[sub] += len(child.ids())
            child.counts(sub, out)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


class QueueModelMachine(RuleBasedStateMachine):
    """The queue under test beside its plain model; no rules of its own."""

    def __init__(self) -> None:
        super().__init__()
        self.q = RequestQueue(
            QueueConfig(max_outstanding_requests_per_tenant=DEFAULT_LIMIT), clock=Clock()
        )
        self.fifo: dict[Key, ModelNode] = {}
        self.placed: dict[str, Path] = {}  # where each queued request waits
        self.requests: dict[str, Request] = {}
        self.in_flight: dict[str, tuple[str, int]] = {}
        self.finished: set[str] = set()
        self.workers: dict[tuple[str, int], int] = {}  # -> last tenant index
        self.limits: dict[str, TenantLimits] = {}
        self.next_id = 0

    # -- model helpers ----------------------------------------------------
    def queued_ids(self) -> list[str]:
        return [rid for tree in self.fifo.values() for rid in tree.ids()]

    def outstanding(self, tenant: str) -> int:
        queued = sum(len(v.ids()) for k, v in self.fifo.items() if k[0] == tenant)
        return queued + sum(1 for rid in self.in_flight if self.requests[rid].tenant_id == tenant)

    def allowed_floor(self, querier: str, tenant: str) -> int | None:
        """None: may not serve the tenant; else the lowest priority it may take."""
        known = sorted({q for q, _ in self.workers})
        limits = self.limits.get(tenant, TenantLimits())
        shard = shuffle_shard(tenant, known, limits.max_queriers)
        if shard is not None and querier not in shard:
            return None
        qp = limits.query_priority
        if not qp.enabled:
            return -(10**9)
        floor = reserved_queriers(shard if shard is not None else known, qp.priorities)
        return floor.get(querier, -(10**9))

    def key(self, request: Request) -> Key:
        return request.tenant_id, request.component, request.priority

    def push(self, request: Request, front: bool, path: Path | None = None) -> None:
        """Queue in the model; deeper actor levels than the setting are ignored."""
        levels = self.q.config.max_queue_hierarchy_levels
        placed = (self.placed[request.id] if path is None else path)[:levels]
        self.placed[request.id] = placed
        self.fifo.setdefault(self.key(request), ModelNode()).add(request.id, placed, front)

    def idle_workers(self) -> list[tuple[str, int]]:
        busy = set(self.in_flight.values())
        return sorted(w for w in self.workers if w not in busy)
