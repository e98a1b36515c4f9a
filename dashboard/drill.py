"""The inspector's drill-down: one node's requests, live, in dequeue order.

A browser sends `drill` (node, filters, how many rows, which rows are open)
and from then on every frame it is sent carries a `drill` section built on
the scheduler's loop from the queue in place (`RequestQueue.listing()`):
the first `limit` matching requests of the node in dequeue order (queued
first, then running), and how many match. Browsers with the same drill
share one page per tick.

What it costs is bounded per tick: the queued rows and their count are
found within budgets (`dashboard.drill_scan`: requests examined, or text
units for a search or regex, shared by the tick's drill pages; past them
the page says "at least N" until the count, kept from tick to tick,
finishes), and the broadcaster's own budget stretches
the cadence when ticks get expensive. On the wire a
row is a positional array whose times are wall-clock instants (queued
since, running since), so a row that did not change is the same bytes on
the next tick and goes as a two-element reference `["=", id]`; the browser
ticks the waits itself. Query text is the first line, cut at
`QUERY_LINE_LIMIT` characters (the full text, up to `QUERY_TEXT_LIMIT`,
comes from the REST detail when a row is expanded).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from api.wire.queue_rows import (
    QUERY_LINE_LIMIT,
    FilterError,
    RequestFilter,
    frontend_of,
    serving_now,
)
from dashboard.drill_scan import (
    SCAN_BUDGET,
    TICK_TEXT_BUDGET,
    DrillBudget,
    DrillCounts,
    scan_queued,
)
from dashboard.wire import dumps
from scheduler_core.model import Request
from scheduler_core.queue_listing import InFlight
from scheduler_core.runtime import SchedulerRuntime

__all__ = [
    "DEFAULT_ROWS",
    "MAX_ROWS",
    "SCAN_BUDGET",
    "TICK_TEXT_BUDGET",
    "DrillBudget",
    "DrillCounts",
    "DrillParams",
    "DrillState",
    "InvalidDrill",
    "build_page",
]

DEFAULT_ROWS = 50
MAX_ROWS = 500
_SOURCES = {"rule": "r", "default": "d", "disabled": "x"}
# Encoded rows of recent ticks, by what can change in a row: a request shown
# tick after tick is serialised once. Cleared whole when it grows past the bound.
_ENCODED: dict[tuple[Any, ...], str] = {}
_ENCODED_MAX = 50_000
_FILTER_KEYS = (
    "tenant",
    "component",
    "priority",
    "state",
    "search",
    "regex",
    "min_wait",
    "frontend",
    "actor",
)


class InvalidDrill(ValueError):
    """A drill message the server cannot serve; `field` names the field, `message` says why."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True, slots=True)
class DrillParams:
    """One browser's drill-down: the filter (node included) and how many rows."""

    filter: RequestFilter
    limit: int = DEFAULT_ROWS

    @classmethod
    def from_message(cls, raw: Mapping[str, Any]) -> DrillParams:
        try:
            flt = RequestFilter.parse({k: raw.get(k) for k in _FILTER_KEYS})
        except FilterError as exc:
            raise InvalidDrill(exc.field, exc.message) from None
        limit = raw.get("limit", DEFAULT_ROWS)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_ROWS:
            raise InvalidDrill("limit", f"an integer from 1 to {MAX_ROWS}")
        for name in ("search", "regex", "frontend", "tenant"):
            value = getattr(flt, name) or ""
            if len(value) > 1000:
                raise InvalidDrill(name, "at most 1000 characters")
        return cls(flt, limit)


def _wall_offset(runtime: SchedulerRuntime) -> float:
    # One offset per runtime: a request's "since" is then the same number on
    # every tick, so unchanged rows stay byte-identical.
    offset = getattr(runtime, "_inspector_wall_offset", None)
    if offset is None:
        offset = time.time() - runtime.clock()
        runtime._inspector_wall_offset = offset  # type: ignore[attr-defined]
    return float(offset)


_TEXT = re.compile(r"\S")


def _first_line(query: str) -> tuple[str, bool]:
    """The query's first line with text on it, and whether the query holds more than that.

    Queries written in Grafana's editor often open with a newline or an
    indent: their first line as such is blank, and a row of only "…" says
    nothing of the query. A line break ending in blanks only is no more
    text (the row says "…" only when expanding it shows something else).
    """
    first = _TEXT.search(query)
    if first is None:
        return "", False
    end = query.find("\n", first.start())
    line = (query[first.start() :] if end < 0 else query[first.start() : end]).rstrip()
    more = end >= 0 and _TEXT.search(query, end) is not None
    return line[:QUERY_LINE_LIMIT], more or len(line) > QUERY_LINE_LIMIT


class _WireRow(NamedTuple):
    """A drill row on the wire: a positional array, in this order (decodeRow in drill_rows.js).

    Built from a request here (`_row`) or from a peer replica's REST row
    (`encode_api_row`); both name their fields, so the order is said once.
    """

    id: str
    client_id: Any
    tenant: str
    component: str
    priority: int
    rule: list[int] | None
    source: str  # "r" rule, "d" default, "x" disabled
    line: str
    more: bool
    api_type: str
    start: float | None
    end: float | None
    step: float | None
    state: str  # "q" queued, "f" in flight
    since: float
    attempts: int
    querier: str | None
    worker: int | None
    running_since: float | None
    transport: str
    address: str
    name: str
    replica: str
    actor: str


def _row(
    request: Request,
    flight: InFlight | None,
    offset: float,
    names: Mapping[str, str],
    replica: str,
) -> _WireRow:
    frontend, client_id = frontend_of(request.payload, names)
    line, more = _first_line(request.query)
    rule = request.priority_rule
    return _WireRow(
        id=request.id,
        client_id=client_id,
        tenant=request.tenant_id,
        component=request.component,
        priority=request.priority,
        rule=list(rule) if rule is not None else None,
        source=_SOURCES.get(request.priority_source, "d"),
        line=line,
        more=more,
        api_type=request.api_type,
        start=request.start,
        end=request.end,
        step=request.step,
        state="q" if flight is None else "f",
        # To the microsecond: the page tells the oldest queued request by it,
        # and the requests of a burst arrive milliseconds apart.
        since=round(request.enqueued_at + offset, 6),
        attempts=request.attempts,
        querier=flight.querier_id if flight is not None else None,
        worker=flight.worker_id if flight is not None else None,
        running_since=round(flight.since + offset, 2) if flight is not None else None,
        transport=frontend["transport"],
        address=frontend["address"],
        name=frontend["name"],
        replica=replica,
        actor="|".join(request.actor_path),
    )


def row_key(replica: str, request_id: str) -> str:
    """A row's key on the wire (and in the browser): request ids are unique per replica."""
    return f"{replica}/{request_id}"


def encode_api_row(row: Mapping[str, Any], queued_since: float, running_since: float | None) -> str:
    """A REST row (`api.wire.queue_rows.request_row`: a peer's answer) as a drill row.

    `queued_since` and `running_since` are wall-clock instants, as `_row` gives.
    """
    line, more = _first_line(row["query"])
    rule = row.get("rule")
    frontend = row["frontend"]
    return dumps(
        _WireRow(
            id=row["id"],
            client_id=row["client_id"],
            tenant=row["tenant"],
            component=row["component"],
            priority=row["priority"],
            rule=None if rule is None else [rule["priority_index"], rule["attribute_index"]],
            source=_SOURCES.get(row["source"], "d"),
            line=line,
            more=more or bool(row.get("query_truncated")),
            api_type=row["api_type"],
            start=row["start"],
            end=row["end"],
            step=row["step"],
            state="f" if row["state"] == "in_flight" else "q",
            since=queued_since,
            attempts=row["attempts"],
            querier=row["querier"],
            worker=row["worker"],
            running_since=running_since,
            transport=frontend["transport"],
            address=frontend["address"],
            name=frontend["name"],
            replica=row["replica"],
            actor=row.get("actor", ""),
        )
    )


def _encoded(
    request: Request,
    flight: InFlight | None,
    offset: float,
    names: Mapping[str, str],
    replica: str,
) -> str:
    key = (
        request.id,
        request.enqueued_at,
        request.attempts,
        None if flight is None else (flight.querier_id, flight.worker_id, flight.since),
        replica,
    )
    text = _ENCODED.get(key)
    if text is None:
        if len(_ENCODED) >= _ENCODED_MAX:
            _ENCODED.clear()
        text = _ENCODED[key] = dumps(_row(request, flight, offset, names, replica))
    return text


def build_page(
    runtime: SchedulerRuntime,
    params: DrillParams,
    names: Mapping[str, str],
    replica: str,
    budget: DrillBudget | None = None,
) -> dict[str, Any]:
    """The drill page: rows (encoded strings, dequeue order) and the match count.

    A tenant's page also says who may serve it (`serving`) and how many of
    its requests run at this instant, whatever the filter (`tenant_running`).
    A filter that reads query text spends no more than its share of
    `budget` (the tick's `DrillBudget`, shared by its drill pages); with the
    budget's kept counts its count converges over ticks, and `counted_at`
    (wall clock) says when the count shown finished.
    """
    flt = params.filter
    queue = runtime.queue
    now = runtime.clock()
    offset = _wall_offset(runtime)
    rows: list[tuple[str, str]] = []
    complete = True
    queued_total = 0
    counted_at: float | None = None
    if flt.state != "in_flight":
        queued = scan_queued(queue, params, now, names, budget)
        queued_total, complete, counted_at = queued.total, queued.exact, queued.counted_at
        rows += [
            (row_key(replica, r.id), _encoded(r, None, offset, names, replica)) for r in queued.rows
        ]
    queued_rows = len(rows)
    running_total = 0
    # Every running request, read once: the running rows and the tenant's
    # running count come from this one instant.
    flying = queue.listing().in_flight() if flt.state != "queued" or flt.tenant else []
    if flt.state != "queued":
        test = flt.predicate(now, names, node=True)
        flights = [f for f in flying if test is None or test(f.request)]
        running_total = len(flights)
        room = params.limit - len(rows)
        rows += [
            (row_key(replica, f.request.id), _encoded(f.request, f, offset, names, replica))
            for f in flights[: max(0, room)]
        ]
    page: dict[str, Any] = {
        "rows": rows,
        "queued_rows": queued_rows,
        "total": queued_total + running_total,
        "exact": complete,
    }
    if counted_at is not None:
        # The count was kept across ticks (dashboard.drill_scan.DrillCounts):
        # the wall-clock instant it finished, as the rows' "since" instants.
        page["counted_at"] = round(counted_at + offset, 2)
    if flt.tenant:
        page["serving"] = serving_now(queue, flt.tenant)
        # The panel's querier-time line says how many of the tenant's requests
        # run now. The header's usage block it reads the rest from is built at
        # most once a second (api.wire.usage_block.UsagePages: a few ms of the
        # loop at 10,000 tenants), while these rows are every tick's: its
        # "3 running now" sat beside 4 running rows. Counted here from the
        # rows' own instant instead: one pass over the running requests (one
        # per busy worker) that this page already lists, where rebuilding
        # the block per tick would walk every tenant.
        page["tenant_running"] = sum(1 for f in flying if f.request.tenant_id == flt.tenant)
    return page


class DrillState:
    """One viewer's drill: its params and what it was last sent (for references).

    Besides the rows, the tenant's `serving` goes only when it changed: a
    shard of hundreds of queriers would otherwise be resent every tick.
    """

    def __init__(self, params: DrillParams) -> None:
        self.params = params
        self._sent: dict[str, str] = {}
        self._serving = ""

    def reset(self) -> None:
        """Next section sends every row in full (after a resync or a new snapshot)."""
        self._sent = {}
        self._serving = ""

    def section(self, page: Mapping[str, Any] | None, full: bool) -> str:
        """The `drill` section: unchanged rows as `["=", id]`, new or changed ones in full."""
        if full:
            self.reset()
        flt = self.params.filter
        head = {
            "filter": {k: v for k, v in _filter_dict(flt).items() if v not in (None, "")},
            "limit": self.params.limit,
        }
        if page is None:
            return dumps({**head, "unavailable": True, "rows": [], "total": 0, "exact": True})
        parts: list[str] = []
        sent: dict[str, str] = {}
        for rid, text in page["rows"]:
            parts.append(dumps(["=", rid]) if self._sent.get(rid) == text else text)
            sent[rid] = text
        self._sent = sent
        head = {**head, "total": page["total"], "exact": page["exact"]}
        for extra in ("replicas_missing", "replicas_pending", "counted_at"):
            if page.get(extra):
                head[extra] = page[extra]
        if "tenant_running" in page:  # none running is a count too
            head["tenant_running"] = page["tenant_running"]
        serving = page.get("serving")
        if serving is not None and (text := dumps(serving)) != self._serving:
            head["serving"] = serving
            self._serving = text
        body = dumps(head)
        return f'{body[:-1]},"rows":[{",".join(parts)}]}}'


def _filter_dict(flt: RequestFilter) -> dict[str, Any]:
    return {k: getattr(flt, k) for k in _FILTER_KEYS}
