"""This replica's requests: list, find and cancel them, on the runtime's loop.

Every function here runs on the event loop that owns the runtime (the REST
views reach it with `async_to_sync`, the inspector is already on it), reads
the queue through `RequestQueue.listing()` and copies nothing but the rows
it returns. A page is filled in steps of at most `PAGE_BUDGET` examined
requests (units of query text, `TextCost`, when a search or regex reads
it: a step then holds the loop about as long whatever the query sizes)
with a loop turn between steps, each step resuming from the
listing's position, so a search that matches rarely never holds the loop
for long and dispatch keeps going between steps; a filtered `total` is
counted the same way (`MatchScan`). A cancel by filter, on the other hand,
runs in one step, so it cancels exactly the set that matched.

A dry run's count (`count_as_of`) says the instant it counted at, and
counts only requests enqueued by then (a scan in steps meets later
arrivals): a cancel given that instant as `enqueued_before` takes those
of them still queued and nothing enqueued since.

The cursor handed out is opaque: base64url of
`[filter fingerprint, phase, position, rows returned so far]`, where the
phase is "q" (queued, the core listing's position) or "f" (in flight, an
offset in the longest-running-first order). Whether a page is the last is
decided by its position alone: nothing matches after it. The rows returned
so far are carried (older cursors hold them) but decide nothing: some of
them may have left the queue since, so comparing them with the current
`total` ended a listing while requests after the position still waited.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from api.wire import queue_rows
from api.wire.queue_rows import QUERY_TEXT_LIMIT, RequestFilter, request_detail, request_row
from scheduler_core.queue_listing import MatchScan, Predicate, StaleCursor, take_page
from scheduler_core.runtime import SchedulerRuntime

__all__ = [
    "PAGE_BUDGET",
    "CursorError",
    "Page",
    "answered_check",
    "cancel_matching",
    "cancel_one",
    "count_as_of",
    "count_matching",
    "count_phases",
    "decode_cursor",
    "encode_cursor",
    "find_row",
    "grpc_names",
    "list_page",
    "operator_reason",
]

# Requests examined per loop step while filling a page or counting matches
# (text units with a search or regex: ~3-5 ms of the loop at any query size).
PAGE_BUDGET = 2_000
_EVERY = 1 << 62  # a page limit no node reaches: take every match


class CursorError(ValueError):
    """The cursor is malformed or belongs to another filter (or layout)."""


@dataclass(slots=True)
class Page:
    """One page; `loop_seconds` is the time it held the event loop (its steps summed)."""

    rows: list[dict[str, Any]]
    next: str | None
    total: int
    loop_seconds: float = 0.0


class _LoopTimer:
    """Sums the synchronous steps of a coroutine: the time it held the loop.

    CPU time of the loop's thread (`thread_time`), so a busy machine that
    preempts the process does not inflate the figure.
    """

    __slots__ = ("_at", "spent")

    def __init__(self) -> None:
        self.spent = 0.0
        self._at = time.thread_time()

    async def yield_loop(self) -> None:
        self.spent += time.thread_time() - self._at
        await asyncio.sleep(0)
        self._at = time.thread_time()

    def stop(self) -> float:
        self.spent += time.thread_time() - self._at
        self._at = time.thread_time()
        return self.spent


def encode_cursor(fingerprint: str, phase: str, position: Any, returned: int) -> str:
    body = json.dumps([fingerprint, phase, position, returned], separators=(",", ":"))
    return base64.urlsafe_b64encode(body.encode()).decode().rstrip("=")


def decode_cursor(text: str, fingerprint: str) -> tuple[str, Any, int]:
    """(phase, position, rows returned so far); raises CursorError."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        value = json.loads(raw)
    except (binascii.Error, ValueError):
        raise CursorError("not a cursor this API gave out") from None
    if not (isinstance(value, list) and len(value) == 4 and value[1] in ("q", "f")):
        raise CursorError("not a cursor this API gave out")
    mark, phase, position, returned = value
    if mark != fingerprint:
        raise CursorError("this cursor belongs to a listing with other filters")
    if not isinstance(returned, int) or returned < 0:
        raise CursorError("not a cursor this API gave out")
    if phase == "f" and (not isinstance(position, int) or position < 0):
        raise CursorError("not a cursor this API gave out")
    return phase, position, returned


def answered_check(host: Any) -> Callable[[str], bool]:
    """Whether a request's result already reached its frontend while it is still in flight.

    Only the gRPC door's bridge has such requests: a Cortex querier sends a
    websocket frontend's result before its "done", so the request stays in
    flight until then.
    """
    door = getattr(host, "grpc_door", None)
    return _never if door is None else door.foreign.answered


def _never(_request_id: str) -> bool:
    return False


def grpc_names(host: Any) -> dict[str, str]:
    """gRPC frontend address -> the name the door knows it by (mutual TLS)."""
    return {row.address: row.name for row in host.frontends() if row.transport == "grpc"}


def _node(flt: RequestFilter) -> dict[str, Any]:
    return {"tenant": flt.tenant, "component": flt.component, "priority": flt.priority}


async def count_matching(
    runtime: SchedulerRuntime,
    flt: RequestFilter,
    names: Mapping[str, str],
    timer: _LoopTimer | None = None,
    queued: int | None = None,
) -> int:
    """How many requests match: queued from counters (or a stepped scan), plus running.

    `queued`, when the caller already walked every queued match (a first
    page that reached the end), is taken as the queued count: no second scan.
    """
    return sum(await _count(runtime, flt, names, timer, queued, runtime.clock(), None))


async def count_phases(
    runtime: SchedulerRuntime, flt: RequestFilter, names: Mapping[str, str]
) -> tuple[int, int]:
    """`count_matching` split: (queued, running); a phase the filter's state leaves out is 0.

    A listing across replicas reads from it which of its later steps (phase
    x replica) hold anything, so its last page is the last that has rows.
    """
    return await _count(runtime, flt, names, None, None, runtime.clock(), None)


async def count_as_of(
    runtime: SchedulerRuntime, flt: RequestFilter, names: Mapping[str, str]
) -> tuple[int, float]:
    """(`count_matching` of requests enqueued by now, now in unix seconds).

    The instant is rounded up to the microsecond (what JSON carries back
    exactly), so every request counted was enqueued at or before it. Both
    clocks are read once, for the instant and the predicate: a count of a
    node alone stays one read of the queue's counters.
    """
    now, wall = runtime.clock(), queue_rows.wall_clock()
    as_of = math.ceil(wall * 1e6) / 1e6
    return sum(await _count(runtime, flt.by(as_of), names, None, None, now, wall)), as_of


async def _count(
    runtime: SchedulerRuntime,
    flt: RequestFilter,
    names: Mapping[str, str],
    timer: _LoopTimer | None,
    queued: int | None,
    now: float,
    wall: float | None,
) -> tuple[int, int]:
    """(queued, running) matches."""
    timer = timer or _LoopTimer()
    queue = runtime.queue
    waiting = running = 0
    if flt.state != "in_flight" and queued is not None:
        waiting = queued
    elif flt.state != "in_flight":
        predicate = flt.predicate(now, names, wall=wall)
        if predicate is None:
            waiting = queue.listing().queued_count(**_node(flt))
        else:
            scan = MatchScan(
                queue.listing(), predicate=predicate, cost=flt.text_cost(), **_node(flt)
            )
            while not scan.step(PAGE_BUDGET):
                await timer.yield_loop()
            waiting = scan.count
    if flt.state != "queued":
        test = flt.predicate(now, names, node=True, wall=wall)
        running = sum(1 for f in queue.listing().in_flight() if test is None or test(f.request))
    return waiting, running


async def list_page(
    runtime: SchedulerRuntime,
    flt: RequestFilter,
    *,
    cursor: str | None,
    limit: int,
    replica: str,
    names: Mapping[str, str],
    query_limit: int = QUERY_TEXT_LIMIT,
) -> Page:
    """One page: queued rows in dequeue order first, then running ones, longest first."""
    timer = _LoopTimer()
    fingerprint = flt.fingerprint()
    if cursor:
        phase, position, returned = decode_cursor(cursor, fingerprint)
    else:
        phase, position, returned = ("f" if flt.state == "in_flight" else "q"), None, 0
    queue = runtime.queue
    rows: list[dict[str, Any]] = []
    exhausted = False
    # Every queued match, when a first page walked to the end of the node.
    queued_seen: int | None = None
    if phase == "q":
        predicate: Predicate | None = flt.predicate(runtime.clock(), names)
        cost = flt.text_cost()
        while True:
            try:
                listing = queue.listing().queued(after=position, **_node(flt))
            except StaleCursor as exc:
                raise CursorError(str(exc)) from None
            got, done = take_page(listing, limit - len(rows), predicate, PAGE_BUDGET, cost)
            now = runtime.clock()
            rows += [
                request_row(
                    r, None, now, replica=replica, grpc_names=names, query_limit=query_limit
                )
                for r in got
            ]
            position = listing.position()
            if done or len(rows) >= limit:
                break
            await timer.yield_loop()
        if cursor is None and predicate is not None:
            # A first page counts its matches by walking on from where it
            # stopped: one pass over the node, not a second scan from the top.
            after = 0 if done else (await _scan_after(queue, flt, position, predicate, timer))[0]
            queued_seen = len(rows) + after
            done = after == 0
        elif not done:
            # A full page: the last one only if nothing matches after it.
            # (Cut short by a layout change: not the last; the next page says so.)
            found, cut_short = await _scan_after(queue, flt, position, predicate, timer, most=1)
            done = not (found or cut_short)
        if done:
            if flt.state is None:
                phase, position = "f", 0
            else:
                exhausted = True
    if phase == "f":
        now = runtime.clock()
        test = flt.predicate(now, names, node=True)
        flights = [f for f in queue.listing().in_flight() if test is None or test(f.request)]
        offset = position or 0
        chosen = flights[offset : offset + max(0, limit - len(rows))]
        rows += [
            request_row(
                f.request, f, now, replica=replica, grpc_names=names, query_limit=query_limit
            )
            for f in chosen
        ]
        position = offset + len(chosen)
        exhausted = position >= len(flights)
    total = await count_matching(runtime, flt, names, timer, queued_seen)
    returned += len(rows)
    following = None
    if not exhausted:
        following = encode_cursor(fingerprint, phase, position, returned)
    return Page(rows, following, total, timer.stop())


async def _scan_after(
    queue: Any,
    flt: RequestFilter,
    position: Any,
    predicate: Predicate | None,
    timer: _LoopTimer,
    most: int = _EVERY,
) -> tuple[int, bool]:
    """Matches after `position` in the node's dequeue order, counted up to `most`
    in bounded steps; and whether a layout change between steps cut the walk short."""
    count = 0
    cost = flt.text_cost()
    while True:
        try:
            listing = queue.listing().queued(after=position, **_node(flt))
        except StaleCursor:  # pragma: no cover - the layout changed between steps
            return count, True
        got, done = take_page(listing, most - count, predicate, PAGE_BUDGET, cost)
        count += len(got)
        if done or count >= most:
            return count, False
        position = listing.position()
        await timer.yield_loop()


def find_row(
    runtime: SchedulerRuntime,
    request_id: str,
    *,
    replica: str,
    names: Mapping[str, str],
    query_limit: int = QUERY_TEXT_LIMIT,
) -> dict[str, Any] | None:
    """The detail row of a queued or running request, None once it left and finished."""
    found = runtime.queue.listing().find(request_id)
    if found is None:
        return None
    request, flight = found
    now = runtime.clock()
    return request_detail(
        request, flight, now, replica=replica, grpc_names=names, query_limit=query_limit
    )


def operator_reason(who: str, note: str = "") -> str:
    """The failure text the frontend of a cancelled request receives."""
    reason = f"cancelled by operator {who}" if who else "cancelled by an operator"
    return f"{reason}: {note}" if note else reason


def cancel_one(
    runtime: SchedulerRuntime,
    request_id: str,
    reason: str,
    *,
    replica: str,
    names: Mapping[str, str],
    answered: Callable[[str], bool] = _never,
) -> dict[str, Any] | None:
    """Fail one request with `reason`; its row as it was, or None if unknown.

    None too when the request ended between the row and the cancel (its
    result won), or when its result already reached its frontend and only
    the querier's "done" is awaited (`answered`): answering 200 for either
    said "cancelled" of a request whose frontend got its result, and the
    second also cut the querier's stream.
    """
    row = find_row(runtime, request_id, replica=replica, names=names)
    if row is None or answered(request_id) or runtime.fail(request_id, reason) is None:
        return None
    return row


async def cancel_matching(
    runtime: SchedulerRuntime,
    flt: RequestFilter,
    reason: str,
    *,
    dry_run: bool,
    names: Mapping[str, str],
) -> tuple[int, int]:
    """(matched, cancelled) for queued requests; a dry run only counts (stepped)."""
    if dry_run:
        return await count_matching(runtime, flt, names), 0
    predicate = flt.predicate(runtime.clock(), names)
    failed = runtime.fail_matching(reason, predicate=predicate, **_node(flt))
    return len(failed), len(failed)
