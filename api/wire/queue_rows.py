"""What one queued or running request looks like to the REST API and the inspector.

A row is built from the `Request` the scheduler already keeps (its rule
index and source were stamped at classification, `priority_origin`) and
its reply handle in `Request.payload` (which frontend sent it), so showing
a request costs nothing on the dispatch path. Query texts are cut here, on
the server: `QUERY_TEXT_LIMIT` characters in an API row, the first line
up to `QUERY_LINE_LIMIT` characters in the inspector's live rows.
`RequestFilter` is one listing's filter, validated once (its fields are
read in `queue_filter_params`, with `FilterError`, re-exported here), and
its `predicate` the part the queue's node walk does not already apply.
Its `enqueued_before` is an instant in unix seconds on this replica's
clock (`wall_clock`); a request's enqueue time is on the queue's clock,
so the predicate moves the instant onto it by the lead the wall clock has
over the queue's clock, read when the predicate is made.
`request_detail` is the one-request row (`GET queue/requests/{id}/`): the
same row plus what the explain box needs of the request, worked out only
when one request is asked for.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from api.wire.frontends import websocket_address

# Re-exported: callers import the filter's error and states from here.
from api.wire.queue_filter_params import STATES, FilterError, filter_fields
from scheduler_core.actor_path import parse_actor_path
from scheduler_core.classify import EXPRESSION_API_TYPES, client_headers
from scheduler_core.cortex_http import FORWARDED_HEADERS, parse_forwarded_request
from scheduler_core.model import Request, TenantLimits
from scheduler_core.queue import RequestQueue
from scheduler_core.queue_listing import InFlight, Predicate, TextCost
from scheduler_core.regex import compile_regex
from scheduler_core.rejection import Verdict
from scheduler_core.snapshot import TenantServing

__all__ = [
    "QUERY_LINE_LIMIT",
    "QUERY_TEXT_LIMIT",
    "STATES",
    "INSTANT_SLACK",
    "FilterError",
    "RequestFilter",
    "frontend_of",
    "priority_origin",
    "request_detail",
    "request_row",
    "serving_body",
    "serving_now",
    "wall_clock",
]

# Characters of query text in one API row (`query_truncated` says when cut).
QUERY_TEXT_LIMIT = 16_384
# Characters of the first line of a query in the inspector's live rows.
QUERY_LINE_LIMIT = 160
# `enqueued_before` is taken to within this: an instant is given to the
# microsecond, and reading the two clocks one after the other costs a
# fraction of one. No request is enqueued so soon after a count that it
# falls inside: the count holds the loop longer than this.
INSTANT_SLACK = 1e-6


def wall_clock() -> float:
    """Unix seconds now, the clock `enqueued_before` and a dry run's `as_of` are on."""
    return time.time()


def priority_origin(limits: TenantLimits, verdict: Verdict) -> tuple[tuple[int, int] | None, str]:
    """The matched rule (priority index, attribute index) and the source of a verdict."""
    if not limits.query_priority.enabled:
        return None, "disabled"
    if verdict.rule_index is None or verdict.attribute_index is None:
        return None, "default"
    return (verdict.rule_index, verdict.attribute_index), "rule"


def frontend_of(payload: Any, grpc_names: Mapping[str, str]) -> tuple[dict[str, str], Any]:
    """The frontend (transport, address, name) and its own id for the request.

    Websocket handles hold their consumer (the name it gave or its peer
    address, as the frontends panel lists it; the token name) and
    the client's `id`; gRPC handles the frontend address and Cortex's
    `queryID`, the name being the client certificate's common name the
    door recorded for that address (`grpc_names`).
    """
    transport = getattr(payload, "transport", None)
    if transport == "websocket":
        consumer = payload.consumer
        token = getattr(consumer, "token", None)
        name = getattr(token, "name", "") or ""
        address = websocket_address(consumer)
        return {"transport": "websocket", "address": address, "name": name}, payload.client_id
    if transport == "grpc":
        address = payload.frontend_address
        grpc = {"transport": "grpc", "address": address, "name": grpc_names.get(address, "")}
        return grpc, payload.query_id
    return {"transport": "internal", "address": "", "name": ""}, None


def _cut(text: str, limit: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= limit else (text[:limit], True)


def request_row(
    request: Request,
    flight: InFlight | None,
    now: float,
    *,
    replica: str,
    grpc_names: Mapping[str, str],
    query_limit: int = QUERY_TEXT_LIMIT,
) -> dict[str, Any]:
    """The REST row of a request (`now` on the queue's clock)."""
    frontend, client_id = frontend_of(request.payload, grpc_names)
    query, truncated = _cut(request.query, query_limit)
    rule = request.priority_rule
    if flight is None:
        wait, running = max(0.0, now - request.enqueued_at), None
    else:
        wait = max(0.0, flight.since - request.enqueued_at)
        running = max(0.0, now - flight.since)
    return {
        "id": request.id,
        "client_id": client_id,
        "tenant": request.tenant_id,
        "component": request.component,
        "priority": request.priority,
        "rule": None if rule is None else {"priority_index": rule[0], "attribute_index": rule[1]},
        "source": request.priority_source,
        "query": query,
        "query_truncated": truncated,
        "api_type": request.api_type,
        "start": request.start,
        "end": request.end,
        "step": request.step,
        "state": "queued" if flight is None else "in_flight",
        "wait_seconds": round(wait, 3),
        "attempts": request.attempts,
        "querier": flight.querier_id if flight is not None else None,
        "worker": flight.worker_id if flight is not None else None,
        "running_seconds": None if running is None else round(running, 3),
        "frontend": frontend,
        "replica": replica,
        "actor": "|".join(request.actor_path),
    }


def request_detail(
    request: Request,
    flight: InFlight | None,
    now: float,
    *,
    replica: str,
    grpc_names: Mapping[str, str],
    query_limit: int = QUERY_TEXT_LIMIT,
) -> dict[str, Any]:
    """`request_row` and the request's `headers` and `matchers`, as its rules read them.

    `headers` holds only User-Agent, X-Dashboard-Uid and X-Panel-Id, the
    headers priority and rejection rules match: a frontend's other headers
    (Authorization, cookies, a tenant's own) may carry credentials, and a
    viewer may read this row. Each is read as classification read it (any
    case, the first one sent wins) and named in its canonical spelling.
    """
    row = request_row(
        request, flight, now, replica=replica, grpc_names=grpc_names, query_limit=query_limit
    )
    found = zip(FORWARDED_HEADERS, client_headers(request.headers), strict=True)
    row["headers"] = {name: value for name, value in found if value}
    row["matchers"] = _matchers(request, row["query"], row["query_truncated"])
    return row


def _matchers(request: Request, shown: str, truncated: bool) -> list[str] | None:
    """A metadata call's `match[]` selectors apart, as the gRPC door judged them.

    The door keeps only their "," join in `query`, which cannot be split
    back (a selector may hold a ","), so they are read again from the
    forwarded HTTP request its reply handle keeps: here, per detail asked,
    never at enqueue or dispatch. None for a query or query_range call,
    and for a websocket request, whose enqueue carries one `query` text that
    its rules judged as one selector. With a query cut at the row's limit,
    the selectors the cut text holds whole.
    """
    http = getattr(request.payload, "http_request", None)
    if request.api_type in EXPRESSION_API_TYPES or http is None:
        return None
    pairs = ((header.key, header.values) for header in http.headers)
    # Only the selectors are used: `now` fills in times, which the row has.
    forwarded = parse_forwarded_request(http.method, http.url, pairs, http.body, now=0.0)
    selectors = list(forwarded.matchers)
    if not truncated:
        return selectors
    whole: list[str] = []
    end = -1  # where the "," join of `whole` ends, counting the "," before the next
    for selector in selectors:
        end += 1 + len(selector)
        if end > len(shown):
            break
        whole.append(selector)
    return whole


@dataclass(frozen=True, slots=True)
class RequestFilter:
    """One listing's or cancel's filter; `parse` validates every field."""

    tenant: str | None = None
    component: str | None = None
    priority: int | None = None
    state: str | None = None
    search: str = ""
    regex: str = ""
    min_wait: float | None = None
    frontend: str = ""
    actor: str = ""  # an actor path ("users|joe"): that sub-queue and everything below it
    # Only requests enqueued at or before this instant (unix seconds, on this
    # replica's clock: a peer's is moved onto it by `queue_peers`).
    enqueued_before: float | None = None

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> RequestFilter:
        """From query parameters or a JSON body; raises FilterError naming the field."""
        return cls(**filter_fields(raw))

    @property
    def narrows(self) -> bool:
        """Whether rows must be tested one by one (beyond the node and priority)."""
        return bool(
            self.search
            or self.regex
            or self.frontend
            or self.actor
            or self.min_wait is not None
            or self.enqueued_before is not None
        )

    def text_cost(self) -> TextCost | None:
        """A fresh meter for scans when the predicate reads query text (search, regex).

        Such a test costs in proportion to the text, so its scans budget in
        `TextCost` units; None otherwise, and the scans count requests as before.
        """
        return TextCost() if self.search or self.regex else None

    def as_args(self) -> dict[str, Any]:
        """Its fields as keywords, `enqueued_before` only when set.

        Left out unset, so a cursor handed out before the field existed
        still reads as the same filter's (`fingerprint`), and a peer still
        on the version before it builds the filter from these keywords: a
        filter without it still reaches that peer, and one with it is
        refused there (its answer fails) rather than read as wider.
        """
        args = asdict(self)
        if self.enqueued_before is None:
            del args["enqueued_before"]
        return args

    def by(self, instant: float) -> RequestFilter:
        """This filter taking nothing enqueued after `instant` (nor after its own, if earlier)."""
        if self.enqueued_before is not None and self.enqueued_before <= instant:
            return self
        return replace(self, enqueued_before=instant)

    def fingerprint(self) -> str:
        """Short digest of the filter, so a cursor cannot be reused with another one."""
        body = json.dumps(self.as_args(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(body.encode()).hexdigest()[:12]

    def predicate(
        self,
        now: float,
        grpc_names: Mapping[str, str],
        *,
        node: bool = False,
        wall: float | None = None,
    ) -> Predicate | None:
        """Tests a request against the text, wait and frontend fields (`now`: queue clock).

        With `node`, also against tenant, component and priority (for
        in-flight requests, which no node walk filters). `wall` is
        `wall_clock()` read with `now` (read here when not given).
        """
        tests: list[Predicate] = []
        if node:
            tenant, component, priority = self.tenant, self.component, self.priority
            if tenant is not None:
                tests.append(lambda r: r.tenant_id == tenant)
            if component is not None:
                tests.append(lambda r: r.component == component)
            if priority is not None:
                tests.append(lambda r: r.priority == priority)
        if self.search:
            tests.append(_substring(self.search.casefold()))
        if self.regex:
            search = compile_regex(self.regex).search
            tests.append(lambda r: search(r.query) is not None)
        if self.min_wait is not None:
            least, latest = self.min_wait, now - self.min_wait

            def waited(r: Request) -> bool:
                # Queued at least min_wait, as the row's `wait_seconds` says:
                # for a running request its wait ended at dispatch (by the
                # time since enqueue, one taken at once matched "waited 5 s").
                taken = r.dispatched_at
                return r.enqueued_at <= latest if taken is None else taken - r.enqueued_at >= least

            tests.append(waited)
        if self.frontend:
            needle = self.frontend.casefold()

            def sent_by(r: Request) -> bool:
                row, _ = frontend_of(r.payload, grpc_names)
                return needle in f"{row['transport']} {row['address']} {row['name']}".casefold()

            tests.append(sent_by)
        if self.actor:
            prefix = parse_actor_path(self.actor)
            depth = len(prefix)
            tests.append(lambda r: r.actor_path[:depth] == prefix)
        if self.enqueued_before is not None:
            offset = (wall_clock() if wall is None else wall) - now
            # Its own name: the closures above read theirs when called.
            cutoff = self.enqueued_before - offset + INSTANT_SLACK
            # Everything queued now was enqueued by `now`: an instant at or
            # after it excludes nothing from a walk made in one step, so the
            # queue's counters still count it. A walk in steps (another test
            # above) may meet later arrivals, which the instant keeps out.
            if tests or cutoff < now:
                tests.append(lambda r: r.enqueued_at <= cutoff)
        if not tests:
            return None
        if len(tests) == 1:
            return tests[0]
        return lambda r: all(test(r) for test in tests)


def _substring(needle: str) -> Predicate:
    """The query contains `needle` (casefolded), with a batch form for bulk walks."""

    def contains(r: Request) -> bool:
        return needle in r.query.casefold()

    def batch(requests: list[Request]) -> list[Request]:
        # One comprehension instead of a call per request: about half the cost.
        return [r for r in requests if needle in r.query.casefold()]

    contains.batch = batch  # type: ignore[attr-defined]
    return contains


def serving_now(queue: RequestQueue, tenant_id: str) -> dict[str, Any]:
    """`serving_body` of the live queue, with how many reserved workers sit idle now."""
    served = queue.serving(tenant_id)
    if not served.reservations:
        return serving_body(served)
    return serving_body(served, queue.idle_workers(r.querier_id for r in served.reservations))


def serving_body(served: TenantServing, workers: tuple[int, int] | None = None) -> dict[str, Any]:
    """Who may serve a tenant: its shard, and its reservations by priority.

    The drill-down and `GET queue/requests/?tenant=` say it beside the
    tenant's requests because that is where a backlog shows; the cause, a
    querier that takes only the tenant's higher priorities, is otherwise
    shown only on that querier's card (Cortex shows it nowhere, and one
    reserved share too many starves the rest).
    """
    by_priority = served.by_priority()
    body: dict[str, Any] = {
        "shard": None if served.shard is None else list(served.shard),
        "queriers": served.queriers,
        "reserved": [[p, by_priority[p]] for p in sorted(by_priority, reverse=True)],
    }
    if workers is not None:
        # Live only (a dry run has no workers): the capacity the reservations
        # hold back from the tenant's lower priorities at this moment.
        body["reserved_workers"] = {"idle": workers[0], "connected": workers[1]}
    return body
