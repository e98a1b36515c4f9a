"""The queue's contents, read lazily in dequeue order; cancelling by filter.

`QueueListing` reads a `RequestQueue`'s own structures (made per call by
`RequestQueue.listing()`; it copies nothing) and answers four questions:
which requests are queued under a node, in the order dequeues will take
them; how many (from counters); which are in flight; and which match a
filter (to count or cancel them). The leaf walks live in `listing_walks`,
the per-node plans and their cursors in `listing_order`, taking a page
within a budget in `listing_pages`.

**Order.** A node is a tenant x component leaf, a tenant, a component, or
the whole queue; a priority band is a node plus `priority`.

- A *leaf* lists exactly the order its dequeues take: highest priority
  first, FIFO within one, or with aging on the merge by rank
  `priority * aging - enqueued_at` (ties to the higher priority), which is
  what `Leaf.take` computes from its heads. Requests arriving later never
  reorder the ones listed. One exception, by design of reservations: a
  querier reserved for priority >= P skips lower heads, so with aging on it
  can take a higher-priority request before an aged lower one.
- A node spanning several leaves lists what **one worker of that node
  would take if the node were all the queue held** (worker 0 of a querier
  that may serve every tenant, starting its tenant rotation at the
  beginning of the shared tenant order), in the running layout:
  a tenant in `tenant-first` by the tenant's component choice from its own
  pointer (highest head first when it has priority enabled, else
  round-robin); a tenant in `component-first` by the root's choice
  (round-robin from the root's pointer, or the first present component in
  `COMPONENTS` order for querier-worker priority, which is what worker 0
  is given); a component, and the whole queue in `tenant-first`, in rounds
  over the tenant order (each round takes the next request of every tenant
  that still has one, tenants in slot order); the whole queue in
  `component-first` by replaying the root's component choice and the
  rotation inside each component with the worker's one last-tenant index.
  A priority band of such a node is that order filtered.

**Cost.** Leaves keep one FIFO deque per priority with live heads, so a
page is read from the heads, and a cursor (`position()`) resumes with a
binary search on `enqueued_at` in each FIFO: a page of 50 deep inside
100,000 requests of one leaf costs the search plus a C-level skip, not a
walk. Tenants resume the same way per leaf; components and the
`tenant-first` queue resume from (round, tenant slot) with one pass over
the tenant order; only the `component-first` whole queue replays from its
start (cost grows with the depth of the page). Listings hold deque
iterators, so they must be consumed within one synchronous step: the
service never keeps one across an `await` and resumes from `position()`.
Cursors are positions, not snapshots: requests dequeued meanwhile are gone
and new ones appear in their place; a cursor of a node spanning several
leaves counts rounds, so there a page shifts by the rows that left.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from scheduler_core.listing_order import Predicate, QueuedListing, StaleCursor
from scheduler_core.listing_pages import TextCost, take_page
from scheduler_core.model import QueueConfig, Request
from scheduler_core.nodes import Node, TenantState
from scheduler_core.tenant_querier_assignment import QuerierState, WorkerState

__all__ = [
    "InFlight",
    "MatchScan",
    "Predicate",
    "QueueListing",
    "QueuedListing",
    "StaleCursor",
    "TextCost",
    "take_page",
]


class InFlight(NamedTuple):
    """A running request: the worker holding it and since when (queue clock)."""

    request: Request
    querier_id: str
    worker_id: int
    since: float


class MatchScan:
    """Counts (and collects) the queued requests under a node that match, in steps.

    Each `step(budget)` examines at most about `budget` requests and holds
    no iterator between steps (each leaf is copied as a list of references
    when reached), so the queue may change between steps: a request that
    left meanwhile is not counted, one that arrived after its leaf was
    read is not either. With `cost` (a predicate that reads the query
    text) a step's budget is in its units (`TextCost`), charged to it.
    """

    def __init__(
        self,
        listing: QueueListing,
        *,
        tenant: str | None = None,
        component: str | None = None,
        priority: int | None = None,
        predicate: Predicate | None = None,
        collect: bool = False,
        cost: TextCost | None = None,
    ) -> None:
        self._cost = cost
        self._queue_ids = listing.ids
        self._tenants = listing.tenants
        self._priority = priority
        self._predicate = predicate
        owners: Any = listing.tenants.items()
        if tenant is not None:
            one = listing.tenants.get(tenant)
            owners = [(tenant, one)] if one is not None else []
        self._keys = [
            (tid, comp)
            for tid, owner in owners
            for comp in owner.children
            if component is None or comp == component
        ]
        self._keys.reverse()  # popped from the end: tenants in the dict's order
        self._batch: list[Request] = []
        self._at = 0
        self.count = 0
        self.matched: list[Request] | None = [] if collect else None

    @property
    def done(self) -> bool:
        return not self._keys and self._at >= len(self._batch)

    def step(self, budget: int) -> bool:
        """Examine up to `budget` requests or units (whole leaves when small); True when done."""
        ids = self._queue_ids
        while budget > 0:
            if self._at >= len(self._batch):
                if not self._keys:
                    return True
                tid, comp = self._keys.pop()
                owner = self._tenants.get(tid)
                leaf = owner.children.get(comp) if owner is not None else None
                self._batch = leaf.requests() if leaf is not None else []
                self._at = 0
                continue
            if self._cost is None:
                chunk = self._batch[self._at : self._at + budget]
                budget -= len(chunk)
            else:
                before = self._cost.charged
                end = self._cost.prefix(self._batch, self._at, budget)
                chunk = self._batch[self._at : end]
                budget -= self._cost.charged - before
            self._at += len(chunk)
            prio, pred, out = self._priority, self._predicate, self.matched
            for request in chunk:
                if ids.get(request.id) is not request:
                    continue  # dequeued or cancelled since the leaf was read
                if prio is not None and request.priority != prio:
                    continue
                if pred is not None and not pred(request):
                    continue
                self.count += 1
                if out is not None:
                    out.append(request)
        return self.done


class QueueListing:
    """Read access to one `RequestQueue`'s structures, made per use.

    Built by `RequestQueue.listing()` from the queue's live objects (no
    copy); discard it after the synchronous step that uses it, since a
    layout change replaces the tree it holds.
    """

    def __init__(
        self,
        *,
        config: QueueConfig,
        tenants: Mapping[str, TenantState],
        slots: Sequence[TenantState | None],
        root: Node,
        ids: Mapping[str, Request | WorkerState],
        queriers: Mapping[str, QuerierState],
        total: int,
    ) -> None:
        self.config = config
        self.tenant_first = config.layout == "tenant-first"
        self.tenants = tenants
        self.slots = slots
        self.root = root
        self.ids = ids
        self.queriers = queriers
        self.total = total

    def queued(
        self,
        *,
        tenant: str | None = None,
        component: str | None = None,
        priority: int | None = None,
        after: Any = None,
    ) -> QueuedListing:
        """The queued requests under the node, in dequeue order (raises StaleCursor)."""
        return QueuedListing(
            self, tenant=tenant, component=component, priority=priority, after=after
        )

    def queued_count(
        self,
        *,
        tenant: str | None = None,
        component: str | None = None,
        priority: int | None = None,
    ) -> int:
        """How many are queued under the node, from counters (never walks requests)."""
        if tenant is None and component is None and priority is None:
            return self.total
        if tenant is not None:
            owner = self.tenants.get(tenant)
            owners: Any = [owner] if owner is not None else []
        else:
            owners = self.tenants.values()
        total = 0
        for owner in owners:
            leaves = owner.children
            for comp, leaf in leaves.items():
                if component is not None and comp != component:
                    continue
                if priority is None:
                    total += leaf.length
                else:
                    total += sum(c for p, c in leaf.by_priority() if p == priority)
        return total

    def find(self, request_id: str) -> tuple[Request, InFlight | None] | None:
        """A queued request (None beside it) or an in-flight one (with its worker)."""
        held = self.ids.get(request_id)
        if held is None:
            return None
        if isinstance(held, WorkerState):
            request = held.request
            assert request is not None
            return request, InFlight(request, held.querier_id, held.worker_id, held.since)
        return held, None

    def in_flight(self) -> list[InFlight]:
        """Every running request, longest running first (ties by id)."""
        rows = [
            InFlight(worker.request, worker.querier_id, worker.worker_id, worker.since)
            for querier in self.queriers.values()
            for worker in querier.workers.values()
            if worker.request is not None
        ]
        rows.sort(key=lambda row: (row.since, row.request.id))
        return rows

    def matching(
        self,
        *,
        tenant: str | None = None,
        component: str | None = None,
        priority: int | None = None,
        predicate: Predicate | None = None,
    ) -> list[Request]:
        """Every queued request under the node that matches, in one go (any order)."""
        scan = MatchScan(
            self,
            tenant=tenant,
            component=component,
            priority=priority,
            predicate=predicate,
            collect=True,
        )
        while not scan.step(1 << 30):
            pass
        assert scan.matched is not None
        return scan.matched
