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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from scheduler_core.model import Request
from scheduler_core.queue import RequestQueue
from scheduler_core.queue_listing import MatchScan, StaleCursor, take_page

if TYPE_CHECKING:  # dashboard.drill imports this module
    from dashboard.drill import DrillParams

__all__ = ["SCAN_BUDGET", "TICK_TEXT_BUDGET", "DrillBudget", "scan_queued"]

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
    """

    __slots__ = ("_due", "left")

    def __init__(self, units: int = TICK_TEXT_BUDGET, pages: int = 1) -> None:
        self.left = units
        self._due = max(1, pages)

    @classmethod
    def for_drills(
        cls, drills: Iterable[DrillParams], units: int = TICK_TEXT_BUDGET
    ) -> DrillBudget:
        """A tick's budget, shared by the distinct drills among `drills` that read text."""
        reading = {d for d in drills if d.filter.text_cost() is not None}
        return cls(units, len(reading))

    def share(self) -> int:
        """The units the next page may spend (take them, then `spend` what was used)."""
        share = self.left // self._due
        self._due = max(1, self._due - 1)
        return share

    def spend(self, units: int) -> None:
        self.left = max(0, self.left - units)


def scan_queued(
    queue: RequestQueue,
    params: DrillParams,
    now: float,
    names: Mapping[str, str],
    budget: DrillBudget | None,
) -> tuple[list[Request], int, bool]:
    """(the page's queued rows, how many queued requests match, whether that is exact)."""
    flt = params.filter
    node: dict[str, Any] = {
        "tenant": flt.tenant,
        "component": flt.component,
        "priority": flt.priority,
    }
    predicate = flt.predicate(now, names)
    cost = flt.text_cost()
    allowance = 2 * SCAN_BUDGET
    if cost is not None and budget is not None:
        allowance = budget.share()
    got: list[Request] = []
    done = complete = False
    try:
        listing = queue.listing().queued(**node)
    except StaleCursor:  # pragma: no cover - no cursor is passed here
        listing = None
    if listing is not None:
        scan_budget = SCAN_BUDGET if cost is None else min(SCAN_BUDGET, allowance)
        got, done = take_page(listing, params.limit, predicate, scan_budget, cost)
        complete = done or len(got) >= params.limit
    if predicate is None:
        total = queue.listing().queued_count(**node)
    elif done:
        total = len(got)  # the page walked the whole node: every match
    elif cost is None:
        scan = MatchScan(queue.listing(), predicate=predicate, **node)
        complete = scan.step(SCAN_BUDGET) and complete
        total = scan.count
    else:
        scan = MatchScan(queue.listing(), predicate=predicate, cost=cost, **node)
        left = min(SCAN_BUDGET, allowance - cost.charged)
        complete = left > 0 and scan.step(left) and complete
        # The rows are matches too, met in another order than the count's:
        # a count cut short by the budget still says at least those.
        total = max(scan.count, len(got))
    if cost is not None and budget is not None:
        budget.spend(cost.charged)
    return got, total, complete
