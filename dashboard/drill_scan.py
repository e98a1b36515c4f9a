"""The queued part of a drill page, found within its budgets.

A drill page (`dashboard.drill.build_page`) lists the first matching
queued requests of its node in dequeue order and counts how many match.
Both scans are bounded: at most `SCAN_BUDGET` requests each. A search or
regex reads every examined request's query text, whose length the request
count says nothing of (one drill over 10 KB queries held the loop 1.4 s),
so such scans budget in text units instead (`TextCost`: a request plus one
per 512 characters of its query), and the pages of one tick's distinct
drills share `TICK_TEXT_BUDGET` of them (`DrillBudget`, each drill an
equal share at least): however many viewers open however many drills over
however long queries, a tick's drill work stays bounded. A page that ran
out says "at least N" (not exact) and is served again, from its share, on
the next tick. Filters that read no text scan exactly as before.

A text drill's count over a node bigger than its share converges across
ticks (`DrillCounts`, the broadcaster's, carried by each tick's budget):
its `MatchScan` is kept from tick to tick and stepped with what the page's
rows left of the share, so it reaches the end of the node in a few ticks
where a scan from the start each tick never would. Until one has finished
the page says "at least N"; a finished count is shown, with the instant it
finished (`counted_at`), until the next scan finishes: exact when the
page's rows are complete too (a page whose rows stopped short is never
exact: its oldest row need not be the oldest match). The rows take at most
three quarters of a share then, so a rare match's count moves on as well.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from scheduler_core.listing_order import Predicate
from scheduler_core.listing_pages import TextCost
from scheduler_core.model import Request
from scheduler_core.queue import RequestQueue
from scheduler_core.queue_listing import MatchScan, StaleCursor, take_page

if TYPE_CHECKING:  # dashboard.drill imports this module
    from api.wire.queue_rows import RequestFilter
    from dashboard.drill import DrillParams

__all__ = [
    "SCAN_BUDGET",
    "TICK_TEXT_BUDGET",
    "DrillBudget",
    "DrillCounts",
    "Kept",
    "Queued",
    "scan_queued",
]

SCAN_BUDGET = 20_000
# Text units the drill pages of one tick share. Measured on the 2-core dev
# machine: a unit costs ~1.5-2.5 us of the loop (RE2 "(a|b)*c1z" over 10 KB
# queries ~27 us a request, 21 units; a casefolded search ~18 us), so a
# tick's drills hold the loop ~50 ms at most whatever the query sizes.
TICK_TEXT_BUDGET = 25_000


class DrillBudget:
    """The text units one tick's drill pages share (`TICK_TEXT_BUDGET`).

    Only a page whose filter reads query text takes a share. `pages` is how
    many distinct such drills the tick expects to build; each takes what
    is left divided by the pages still due, so every one gets at least an
    equal share, and what a page did not need goes to those built after
    it: no drill lives on leftovers, whatever order viewers are served in.
    A page beyond those expected (a drill opened mid-tick) gets what is
    left, possibly nothing: it says "at least N" until the next tick.
    `counts` is the counts kept from tick to tick (None: each tick's count
    starts from the node's start, as a one-off page's does).
    """

    __slots__ = ("_due", "counts", "left")

    def __init__(
        self, units: int = TICK_TEXT_BUDGET, pages: int = 1, counts: DrillCounts | None = None
    ) -> None:
        self.left = units
        self._due = max(1, pages)
        self.counts = counts

    @classmethod
    def for_drills(
        cls,
        drills: Iterable[DrillParams],
        units: int = TICK_TEXT_BUDGET,
        counts: DrillCounts | None = None,
    ) -> DrillBudget:
        """A tick's budget, shared by the distinct drills among `drills` that read text."""
        reading = {d for d in drills if d.filter.text_cost() is not None}
        return cls(units, len(reading), counts)

    def share(self) -> int:
        """The units the next page may spend (take them, then `spend` what was used)."""
        share = self.left // self._due
        self._due = max(1, self._due - 1)
        return share

    def spend(self, units: int) -> None:
        self.left = max(0, self.left - units)


class Kept(NamedTuple):
    """One step of a kept count (`DrillCounts.step`)."""

    charged: int  # text units this step spent
    running: int  # matches the scan in progress has met so far
    last: int | None  # the last finished count (None: none finished yet)
    last_at: float | None  # when it finished (queue clock)


class _Count:
    """One text drill's count in progress, and the last one that finished."""

    __slots__ = ("cost", "last", "last_at", "queue", "scan", "test")

    def __init__(self, queue: RequestQueue) -> None:
        self.queue = queue
        self.scan: MatchScan | None = None
        self.cost = TextCost()
        self.test: Predicate = _none
        self.last: int | None = None
        self.last_at: float | None = None

    def current(self, request: Request) -> bool:
        # The scan calls this tick's predicate: a wait or frontend test
        # reads the clock and names of the tick examining the request.
        return self.test(request)


def _none(request: Request) -> bool:  # pragma: no cover - replaced before any step
    return False


class DrillCounts:
    """The counts of text drills kept from tick to tick (the broadcaster holds one).

    Keyed by filter (the node included): identical drills share one count,
    as they share one page per tick, whatever their row limits. A count's
    `MatchScan` holds no iterator between steps and tolerates the queue's
    changes: a request that left before it was examined is not counted,
    nor is one that arrived after its leaf was read. So a finished count
    is of requests each queued when examined, over the ticks the scan took,
    and is exact as of its finish up to the changes of those ticks; the
    next scan starts from the node's start and brings them in. `keep`
    drops the counts of drills no viewer has open, so they cannot pile up.
    """

    def __init__(self) -> None:
        self._kept: dict[RequestFilter, _Count] = {}

    def __len__(self) -> int:
        return len(self._kept)

    def keep(self, drills: Iterable[DrillParams]) -> None:
        """Drop every count but those of `drills` (the drills open at a tick)."""
        wanted = {d.filter for d in drills}
        for key in [k for k in self._kept if k not in wanted]:
            del self._kept[key]

    def _entry(self, queue: RequestQueue, flt: RequestFilter) -> _Count:
        entry = self._kept.get(flt)
        if entry is None or entry.queue is not queue:  # a new queue is counted afresh
            entry = self._kept[flt] = _Count(queue)
        return entry

    def record(self, queue: RequestQueue, flt: RequestFilter, count: int, now: float) -> None:
        """A count found otherwise (a page that walked its whole node): the last finished."""
        entry = self._entry(queue, flt)
        entry.scan = None
        entry.last, entry.last_at = count, now

    def step(
        self,
        queue: RequestQueue,
        flt: RequestFilter,
        node: Mapping[str, Any],
        predicate: Predicate,
        units: int,
        now: float,
    ) -> Kept:
        """Step `flt`'s count by `units` text units (starting one if none runs)."""
        entry = self._entry(queue, flt)
        entry.test = predicate
        if entry.scan is None:
            entry.cost = TextCost()
            entry.scan = MatchScan(
                queue.listing(), predicate=entry.current, cost=entry.cost, **node
            )
        scan = entry.scan
        before = entry.cost.charged
        finished = units > 0 and scan.step(units)
        if finished:  # the next page starts the next scan
            entry.scan = None
            entry.last, entry.last_at = scan.count, now
        return Kept(
            charged=entry.cost.charged - before,
            running=scan.count,
            last=entry.last,
            last_at=entry.last_at,
        )


class Queued:
    """A page's queued part: its rows, how many match, whether exact, and as of when.

    `counted_at` (queue clock) is set when `total` is a count kept across
    ticks (`DrillCounts`): the instant that count finished.
    """

    __slots__ = ("counted_at", "exact", "rows", "total")

    def __init__(
        self, rows: list[Request], total: int, exact: bool, counted_at: float | None = None
    ) -> None:
        self.rows = rows
        self.total = total
        self.exact = exact
        self.counted_at = counted_at


def scan_queued(
    queue: RequestQueue,
    params: DrillParams,
    now: float,
    names: Mapping[str, str],
    budget: DrillBudget | None,
) -> Queued:
    """The page's queued rows, how many queued requests match, and whether that is exact."""
    flt = params.filter
    node: dict[str, Any] = {
        "tenant": flt.tenant,
        "component": flt.component,
        "priority": flt.priority,
    }
    predicate = flt.predicate(now, names)
    cost = flt.text_cost()
    # Without a tick's share (no text read, or a one-off page): `SCAN_BUDGET`
    # for the rows and as much for the count, as before text was budgeted.
    allowance = 2 * SCAN_BUDGET
    counts: DrillCounts | None = None  # kept across ticks for text drills only
    if cost is not None and budget is not None:
        allowance = budget.share()
        counts = budget.counts
    row_units = min(SCAN_BUDGET, allowance)
    if counts is not None:
        # A quarter of the share is the kept count's whatever the rows take:
        # a rare match would otherwise spend every share on the rows and the
        # count would never move on.
        row_units = min(SCAN_BUDGET, allowance - allowance // 4)
    got: list[Request] = []
    done = complete = False
    try:
        listing = queue.listing().queued(**node)
    except StaleCursor:  # pragma: no cover - no cursor is passed here
        listing = None
    if listing is not None:
        got, done = take_page(listing, params.limit, predicate, row_units, cost)
        complete = done or len(got) >= params.limit
    if predicate is None:
        result = Queued(got, queue.listing().queued_count(**node), complete)
    elif done:
        if counts is not None:
            counts.record(queue, flt, len(got), now)
        result = Queued(got, len(got), True)  # the page walked the whole node: every match
    elif cost is None:
        scan = MatchScan(queue.listing(), predicate=predicate, **node)
        complete = scan.step(SCAN_BUDGET) and complete
        result = Queued(got, scan.count, complete)
    elif counts is not None:
        left = min(SCAN_BUDGET, allowance - cost.charged)
        kept = counts.step(queue, flt, node, predicate, left, now)
        cost.charged += kept.charged
        result = _from_kept(got, complete, kept)
    else:
        scan = MatchScan(queue.listing(), predicate=predicate, cost=cost, **node)
        left = min(SCAN_BUDGET, allowance - cost.charged)
        complete = left > 0 and scan.step(left) and complete
        # The rows are matches too, met in another order than the count's:
        # a count cut short by the budget still says at least those.
        result = Queued(got, max(scan.count, len(got)), complete)
    if cost is not None and budget is not None:
        budget.spend(cost.charged)
    return result


def _from_kept(got: list[Request], complete: bool, kept: Kept) -> Queued:
    """A text page's queued part from its rows and its kept count (`DrillCounts.step`)."""
    if kept.last is None:  # none finished yet: at least what was met so far
        return Queued(got, max(kept.running, len(got)), False)
    if len(got) > kept.last:  # more rows than the last count: it is out of date
        return Queued(got, len(got), False)
    return Queued(got, kept.last, complete, kept.last_at)
