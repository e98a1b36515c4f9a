"""Taking one page of matching requests from a `QueuedListing`, within a budget.

A listing (listing_order.py) yields a node's requests in dequeue order;
this module takes up to a page of those a predicate accepts, and stops
once a budget of examined requests is spent, so a rare match cannot hold
the scheduler's loop; the caller resumes from the listing's position.

A predicate that reads the query text (a search or a regex) costs in
proportion to the text's length, so such a scan is given a `TextCost`: the
budget is then in units, each examined request charging one plus one per
`TEXT_UNIT_CHARS` characters of its query, and the scan holds the loop
about as long whatever the query sizes. The charge is made when a request
is examined, so a scan may pass its budget by one request's units.
"""

from __future__ import annotations

from collections.abc import Callable

from scheduler_core.listing_order import Predicate, QueuedListing
from scheduler_core.model import Request

__all__ = ["BULK_FACTOR", "TEXT_UNIT_CHARS", "TextCost", "take_page"]

# How much further a budget goes on a listing read in bulk (measured: a
# chunked leaf walk with a substring test costs about a tenth per request).
BULK_FACTOR = 8
_CHUNK = 4_096
# Characters of query text that cost one unit, about what examining one
# request on a listing's walk costs. Measured (2 cores, RE2 over 10 KB
# texts, pattern "(a|b)*c1z"): a RE2 call costs ~1.8 us whatever the text,
# plus ~2.7 us per KB; a casefolded substring test ~2 us per KB; a listing
# step ~1-2 us. So one unit is ~1.5-2.5 us of the loop at any query size.
TEXT_UNIT_CHARS = 512


class TextCost:
    """What a scan whose predicate reads query text charges per examined request.

    `units(request)` is 1 + len(query) // `TEXT_UNIT_CHARS`; `charged` sums
    what the scans given this object charged, so one budget can be shared
    by several scans (a page and its count, a tick's drill pages). Bulk
    reading does not stretch a budget in units: the text test, not the
    walk, is what each request costs (a RE2 call alone costs as much as a
    listing step).
    """

    __slots__ = ("charged",)

    def __init__(self) -> None:
        self.charged = 0

    @staticmethod
    def units(request: Request) -> int:
        return 1 + len(request.query) // TEXT_UNIT_CHARS

    def prefix(self, requests: list[Request], start: int, budget: int) -> int:
        """The end of the run from `start` that `budget` units pay for (charged).

        At least one request when any is left, so a scan always moves on.
        """
        end, spent, units = start, 0, self.units
        while end < len(requests) and spent < budget:
            spent += units(requests[end])
            end += 1
        self.charged += spent
        return end


def take_page(
    listing: QueuedListing,
    limit: int,
    predicate: Predicate | None = None,
    budget: int | None = None,
    cost: TextCost | None = None,
) -> tuple[list[Request], bool]:
    """Up to `limit` matching requests, and whether the listing ran out.

    Stops early (returning False) once `budget` requests were examined, so
    a rare match cannot hold the loop; resume from `listing.position()`.
    A listing read in bulk examines `BULK_FACTOR` times as many for the
    same budget: each costs about that much less (a C-level slice and one
    test, not a generator step per request). With `cost` (a predicate that
    reads the query text) the budget is in its units, charged to it, and
    is not stretched in bulk.
    """
    if cost is not None:
        return _take_costed(listing, limit, predicate, budget, cost)
    residual = listing.residual
    if listing.chunk is not None:
        test = predicate
        if residual is not None:
            test = residual if predicate is None else _both(residual, predicate)
        scaled = None if budget is None else budget * BULK_FACTOR
        return _take_bulk(listing, listing.chunk, limit, test, scaled)
    rows: list[Request] = []
    for examined, request in enumerate(listing, 1):
        if (residual is None or residual(request)) and (predicate is None or predicate(request)):
            rows.append(request)
            if len(rows) >= limit:
                return rows, False
        if budget is not None and examined >= budget:
            return rows, False
    return rows, True


def _both(first: Predicate, second: Predicate) -> Predicate:
    return lambda r: first(r) and second(r)


def _matching(test: Predicate | None, got: list[Request]) -> list[Request]:
    """The requests of a chunk that `test` accepts."""
    if test is None:
        return got
    # A predicate may carry a `batch` form (list -> matching list).
    batch = getattr(test, "batch", None)
    return batch(got) if batch is not None else list(filter(test, got))


def _filled(
    listing: QueuedListing, rows: list[Request], matched: list[Request], limit: int
) -> bool:
    """Add `matched` to `rows` up to `limit`; True once full, the listing then
    standing after the last row (a cursor resumes there, not after the chunk)."""
    room = limit - len(rows)
    if len(matched) >= room:
        rows += matched[:room]
        if rows:
            listing.stop_at(rows[-1])
        return True
    rows += matched
    return False


def _take_bulk(
    listing: QueuedListing,
    chunk: Callable[[int], list[Request]],
    limit: int,
    test: Predicate | None,
    budget: int | None,
) -> tuple[list[Request], bool]:
    rows: list[Request] = []
    examined = 0
    while True:
        n = _CHUNK if budget is None else min(_CHUNK, budget - examined)
        if n <= 0:
            return rows, False
        got = chunk(n)
        examined += len(got)
        if _filled(listing, rows, _matching(test, got), limit):
            return rows, False
        if len(got) < n:
            return rows, True


def _take_costed(
    listing: QueuedListing,
    limit: int,
    predicate: Predicate | None,
    budget: int | None,
    cost: TextCost,
) -> tuple[list[Request], bool]:
    residual = listing.residual
    test = predicate
    if residual is not None:
        test = residual if predicate is None else _both(residual, predicate)
    rows: list[Request] = []
    left = (1 << 62) if budget is None else budget
    chunk = listing.chunk
    if chunk is None:
        units = cost.units
        for request in listing:
            spent = units(request)
            cost.charged += spent
            left -= spent
            if test is None or test(request):
                rows.append(request)
                if len(rows) >= limit:
                    return rows, False
            if left <= 0:
                return rows, False
        return rows, True
    while left > 0:
        # Each request costs at least one unit: never read more than `left`.
        n = min(_CHUNK, left)
        got = chunk(n)
        before = cost.charged
        end = cost.prefix(got, 0, left)
        left -= cost.charged - before
        examined = got if end == len(got) else got[:end]
        if _filled(listing, rows, _matching(test, examined), limit):
            return rows, False
        if end < len(got):
            # The chunk read past what the budget paid for: stand after the last examined.
            listing.stop_at(examined[-1])
            return rows, False
        if len(got) < n:
            return rows, True
    return rows, False
